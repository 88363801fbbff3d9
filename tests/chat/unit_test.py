#!/usr/bin/env python3
"""Unit tests of the chat-template engine against jinja2: every statement, expression,
filter, test, method and global on small templates, whitespace-control corners, and bad
templates. The expected text (or the exception) is computed with jinja2 at test time in
transformers' environment (jinja_env.py); nothing is stored by hand.

A case passes when ours renders the same bytes, or, where jinja2 raises, ours fails with
a message naming the same exception class. Cases marked ours_only check our own limits
and refusals (jinja2 has no equivalent or would run for hours).

Usage: unit_test.py CHAT_CASES_BINARY WORK_DIR"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

NOW = "2025-07-10T12:34:56"

CASES = []  # (name, template, vars, options)


def case(name, template, opts=None, /, **variables):
    CASES.append((name, template, variables, opts or {}))


def ours_only(name, template, expect, /, limits=None, **variables):
    """A case jinja2 cannot judge: ours must fail with `expect` in the message."""
    CASES.append((name, template, variables, {"ours_only": expect, "limits": limits}))


MSGS = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello!", "tool_calls": None},
    {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
    {"role": "assistant", "reasoning_content": "thinking...", "content": "ok"},
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather \"now\"",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                          "n": {"type": "integer", "default": 3}},
                         "required": ["city"]}}}]

# ---- statements ---------------------------------------------------------------------
case("for_basic", "{% for x in xs %}{{ x }},{% endfor %}", xs=[1, 2, 3])
case("for_loop_vars", "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
     "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}", xs="abc")
case("for_prev_next", "{% for x in xs %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %}", xs=[1, 2, 3])
case("for_prev_defined", "{% for x in xs %}{{ loop.previtem is defined }}{{ loop.nextitem is defined }}{% endfor %}", xs=[1, 2])
case("for_else", "{% for x in xs %}{{ x }}{% else %}empty{% endfor %}", xs=[])
case("for_else_undefined", "{% for x in nothing %}{{ x }}{% else %}none{% endfor %}")
case("for_filter", "{% for x in xs if x is odd %}{{ loop.index }}:{{ x }}/{{ loop.length }}{{ loop.last }} {% endfor %}", xs=list(range(7)))
case("for_filter_else", "{% for x in xs if x > 10 %}{{ x }}{% else %}no{% endfor %}", xs=[1, 2])
case("for_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", d={"b": 1, "a": 2})
case("for_unpack_paren", "{% for (a, b) in xs %}{{ a }}{{ b }}{% endfor %}", xs=[[1, 2], [3, 4]])
case("for_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", d={"z": 1, "y": 2})
case("for_string", "{% for c in 'héllo' %}{{ c }}.{% endfor %}")
case("for_nested_loop", "{% for a in [1,2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}{% endfor %}")
case("for_outer_loop", "{% for a in [1,2] %}{% set outer = loop %}{% for b in [3] %}{{ outer.index }}{{ loop.index }}{% endfor %}{% endfor %}")
case("for_break", "{% for x in range(10) %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}")
case("for_continue", "{% for x in range(6) %}{% if x is even %}{% continue %}{% endif %}{{ x }}{% endfor %}")
case("for_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}")
case("for_changed", "{% for x in [1,1,2,2,1] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}")
case("for_depth", "{% for x in [1] %}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}")
case("for_recursive", "{% for n in tree recursive %}<{{ n.name }}{% if n.kids %}:{{ loop(n.kids) }}{% endif %}:{{ loop.depth }}>{% endfor %}",
     tree=[{"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}]}, {"name": "d"}])
case("for_scope", "{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}")
case("for_scope_if", "{% set x = 5 %}{% for i in range(3) %}{% if i == 0 %}{% set x = 1 %}{% endif %}{{ x }}{% endfor %}")
case("for_scope_fresh", "{% for i in range(3) %}{{ x }}{% set x = i %}{% endfor %}")
case("for_loop_var_leak", "{% for x in [1] %}{% endfor %}{{ x }}|{{ loop }}")
case("for_over_generator", "{% set g = xs|select %}{% for a in g %}{{ a }}{% endfor %}|{% for a in g %}{{ a }}{% endfor %}", xs=[1, 0, 2])
case("for_loop_print", "{% for x in [1, 2] %}{{ loop }}{% endfor %}")
case("for_items_tuple_var", "{% for item in {'a': 1}.items() %}{{ item }}{{ item[0] }}{% endfor %}")
case("if_elif_else", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %} {% endfor %}")
case("if_no_scope", "{% if true %}{% set z = 2 %}{% endif %}{{ z }}")
case("if_tuple_test", "{% if 1, %}yes{% endif %}")
case("set_simple", "{% set a = 1 %}{% set b = a + 1 %}{{ a }}{{ b }}")
case("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c, d = [3, 4] %}{{ c }}{{ d }}")
case("set_tuple_mismatch", "{% set a, b = [1, 2, 3] %}")
case("set_tuple_short", "{% set a, b = [1] %}")
case("set_namespace", "{% set ns = namespace(n=0, s='') %}{% for x in 'abc' %}{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.n }}{{ ns.s }}{{ ns.missing }}")
case("set_namespace_dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns }}")
case("set_namespace_new_attr", "{% set ns = namespace() %}{% set ns.later = 'x' %}{{ ns.later }}")
case("set_not_namespace", "{% set d = {} %}{% set d.x = 1 %}")
case("set_namespace_underscore", "{% set ns = namespace() %}{% set ns._x = 1 %}")
case("namespace_underscore_ctor", "{% set ns = namespace(_a=1) %}")
case("set_block", "{% set x %}Hello {{ name }}!{% endset %}[{{ x }}]", name="W")
case("set_block_filter", "{% set x | upper | replace('L', '_') %}hello{% endset %}{{ x }}")
case("set_block_scope", "{% set y %}{% set z = 1 %}{% endset %}{{ z }}")
case("set_in_macro_scope", "{% macro m() %}{% set x = 5 %}{{ x }}{% endmacro %}{% set x = 1 %}{{ m() }}{{ x }}")
case("macro_basic", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(punct='.', name='C') }}")
case("macro_default_uses_arg", "{% macro m(a, b=a+1) %}{{ a }}{{ b }}{% endmacro %}{{ m(1) }}{{ m(1, 5) }}")
case("macro_missing_arg", "{% macro m(a, b) %}[{{ a }}|{{ b }}|{{ b is defined }}]{% endmacro %}{{ m(1) }}")
case("macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, x=4) }}")
case("macro_too_many", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}")
case("macro_bad_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}")
case("macro_late_binding", "{% set x = 2 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 1 %}{{ m() }}")
case("macro_sees_loop_frame", "{% for i in [1] %}{% set x = 3 %}{% macro m() %}{{ x }}{{ i }}{% endmacro %}{% set x = 4 %}{{ m() }}{% endfor %}")
case("macro_recursive", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% endmacro %}{{ fact(5) }}")
case("macro_returns_string", "{% macro m() %}12{% endmacro %}{{ m() ~ 'x' }}{{ m()|length }}{{ m() is string }}")
case("macro_in_expression", "{% macro m(x) %}<{{ x }}>{% endmacro %}{{ [1, 2]|map('string')|join(',') }}{{ m(m(1)) }}")
case("macro_name", "{% macro foo() %}{% endmacro %}{{ foo.name }}")
case("macro_caller", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ 1 + 1 }}{% endcall %}")
case("macro_caller_args", "{% macro each(xs) %}{% for x in xs %}{{ caller(x, loop.index) }}{% endfor %}{% endmacro %}{% call(item, i) each(['a', 'b']) %}{{ i }}={{ item }};{% endcall %}")
case("macro_no_caller", "{% macro m() %}[{{ caller is defined }}]{% endmacro %}{{ m() }}")
case("call_block_unused_caller", "{% macro m() %}x{% endmacro %}{% call m() %}body{% endcall %}")
case("filter_block", "{% filter upper %}hello {{ 'world' }}{% endfilter %}")
case("filter_block_chain", "{% filter trim|replace('a', 'b')|title %}  banana bread  {% endfilter %}")
case("filter_block_scope", "{% filter upper %}{% set y = 1 %}{{ y }}{% endfilter %}{{ y }}")
case("with_block", "{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% set z = 2 %}{% endwith %}{{ a }}{{ z }}")
case("raw_block", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}!")
case("raw_block_ws", "a\n  {% raw %}\n  {{ x }}\n  {% endraw %}\nb")
case("raw_block_dash", "a  {%- raw -%}  x  {%- endraw -%}  b")
case("comment", "a{# a comment #}b{#- strip -#}  c")
case("comment_multiline", "a\n  {# one\n two #}\nb")
case("generation_tag", "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% set g = 1 %}{% endgeneration %}{% else %}{{ m.role }}{% endif %}|{% endfor %}{{ g }}", messages=MSGS)
case("print_statement", "{% print 'a', 1 + 1 %}")
case("break_outside_loop", "{% break %}")

# ---- expressions -----------------------------------------------------------------------
case("literals", "{{ 1 }} {{ 1.5 }} {{ -2 }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1e3 }} {{ 2.5e-3 }} {{ 1E+2 }}")
case("literal_consts", "{{ true }} {{ True }} {{ false }} {{ none }} {{ None }} {{ [true, none] }}")
case("string_escapes", r"""{{ 'a\nb\tc\\d\'e' }}|{{ "q\"q" }}|{{ '\x41\u00e9\U0001F600' }}|{{ '\101' }}|{{ '\q' }}|{{ 'ab' 'cd' "ef" }}""")
case("string_newline_continuation", "{{ 'a\\\nb' }}")
case("string_backslash_unicode", "{{ '\\é' }}")
case("list_tuple_dict", "{{ [1, 'a', [2]] }} {{ (1, 2) }} {{ (1,) }} {{ () }} {{ {'a': 1, 'b': [1, 2]} }} {{ [] }} {{ {} }} {{ [1, 2,] }} {{ {'k': 1,} }}")
case("tuple_print", "{{ 1, 2 }}")
case("attr_item", "{{ d.a }} {{ d['a'] }} {{ d.b.c }} {{ d['b']['c'] }} {{ xs[0] }} {{ xs.1 }} {{ xs[-1] }} {{ d.missing }}|{{ xs[10] }}|",
     d={"a": 1, "b": {"c": 2}}, xs=[5, 6, 7])
case("attr_method_vs_key", "{{ d.items is callable }}|{{ d['items'] }}|{{ d.keys()|list }}", d={"items": 1, "x": 2})
case("attr_of_none", "{{ none.foo }}|{{ 'x'.foo }}|{{ (1).foo }}")
case("attr_of_undefined_error", "{{ missing.foo }}")
case("attr_of_missing_attr_error", "{{ d.a.b }}", d={})
case("item_of_undefined_error", "{{ missing[0] }}")
case("slicing", "{{ xs[1:] }}{{ xs[:2] }}{{ xs[::2] }}{{ xs[::-1] }}{{ xs[-2:] }}{{ xs[1:-1] }}{{ xs[5:] }}{{ xs[-10:2] }}{{ xs[3:1:-1] }}",
     xs=[0, 1, 2, 3, 4])
case("string_slicing", "{{ s[1:] }}|{{ s[::-1] }}|{{ s[-3:] }}|{{ s[0] }}|{{ s[-1] }}|{{ s[1:6:2] }}", s="héllo wörld")
case("slice_step_zero", "{{ [1, 2][::0] }}")
case("tuple_slice", "{{ (1, 2, 3)[1:] }}")
case("in_not_in", "{{ 'a' in 'cat' }}{{ 'z' not in 'cat' }}{{ 1 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 3 not in [1] }}{{ 'x' in missing }}")
case("in_type_error", "{{ 1 in 'abc' }}")
case("in_none_error", "{{ 'a' in none }}")
case("concat", "{{ 'a' ~ 1 ~ none ~ true ~ [1] ~ missing }}")
case("arith", "{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}")
case("arith_float", "{{ 0.1 + 0.2 }} {{ 1.5 * 2 }} {{ 10 / 4 }} {{ 10.0 // 3 }} {{ -10.5 // 3 }} {{ 5.5 % 2 }} {{ -5.5 % 2 }} {{ 1 / 3 }} {{ 2.0 ** 0.5 }}")
case("arith_mixed", "{{ true + 1 }} {{ 1 + 1.0 }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ [1] * 3 }} {{ [1, 2] + [3] }} {{ 'a' + 'b' }} {{ (1,) + (2,) }}")
case("arith_str_int_error", "{{ 'a' + 1 }}")
case("arith_list_str_error", "{{ [1] + 'a' }}")
case("arith_div_zero", "{{ 1 / 0 }}")
case("arith_floordiv_zero", "{{ 1 // 0 }}")
case("arith_mod_zero", "{{ 1 % 0 }}")
case("arith_undefined_error", "{{ missing + 1 }}")
case("unary", "{{ -x }} {{ +x }} {{ -(-2) }} {{ - 1.5 }} {{ not x }} {{ not 0 }} {{ -x|abs }}", x=3)
case("unary_str_error", "{{ -'a' }}")
case("compare", "{{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 'b' >= 'a' }} {{ 1 == 1.0 }} {{ 1 != 2 }} {{ [1, 2] < [1, 3] }} {{ (1, 2) == [1, 2] }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}")
case("compare_type_error", "{{ 1 < 'a' }}")
case("compare_none_error", "{{ none < 1 }}")
case("compare_undefined", "{{ a == b }} {{ a == none }} {{ a != 1 }}")
case("compare_undefined_order_error", "{{ a < 1 }}")
case("and_or_values", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' and 1 }} {{ none or none }} {{ [] or {} or 3 }} {{ 1 or undefined_thing.boom }}")
case("cond_expr", "{{ 'a' if x else 'b' }}{{ 'c' if not x }}|{{ ('d' if false) is defined }}{{ 1 if x else 2 if y else 3 }}", x=0, y=1)
case("cond_expr_undefined_error", "{{ (1 if false).attr }}")
case("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 * 3 ** 2 }} {{ -2 ** 2 }} {{ not 1 == 2 }} {{ 1 + 1 ~ 2 }} {{ 'a' ~ 1 + 2 }} {{ 10 - 2 - 3 }} {{ 2 ** 2 ** 3 }}")
case("filter_precedence", "{{ -3|abs }} {{ 'a' ~ 'b'|upper }} {{ [3, 1]|sort|first }} {{ x|default(1) + 1 }}")
case("call_on_filter_result", "{{ ('a,b'|string).split(',') }}")
case("test_precedence", "{{ not x is defined }} {{ x is not defined and true }} {{ 1 is number or false }}")
case("dyn_args", "{% macro m(a, b, c=3) %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(*[1, 2]) }}{{ m(1, **{'b': 5, 'c': 6}) }}")
case("print_none_bool", "{{ none }} {{ true }} {{ false }} {{ missing }}|")
case("print_floats", "{{ 1.0 }} {{ 100.0 }} {{ 1e16 }} {{ 1e15 }} {{ 1.5e-5 }} {{ 0.0001 }} {{ 0.00001 }} {{ 123456789.125 }} {{ -0.0 }} {{ 1e300 * 1e10 }} {{ 3.0 * 2 }} {{ 2 / 3 }}")
case("print_containers", "{{ ['it\\'s', \"q\\\"\", 'a\\nb', 'é', '\\x00', '\\u200b'] }} {{ {'k': (1, 'a')} }} {{ [none, true, 1.5] }}")
case("print_unicode_repr", "{{ ['日本', '\\u2028', '\\ud7ff', 'tab\\t'] }}")
case("print_range", "{{ range(3) }} {{ range(1, 10, 2) }}")
case("print_views", "{{ d.keys() }} {{ d.values() }} {{ d.items() }}", d={"a": 1})

# ---- undefined -------------------------------------------------------------------------
case("undefined_prints_empty", "[{{ x }}][{{ x.y is defined }}]", x={})
case("undefined_tests", "{{ x is defined }}{{ x is undefined }}{{ x is none }}{{ x is string }}{{ x is iterable }}{{ x is sequence }}{{ x is callable }}")
case("undefined_in_filters", "{{ x|default('d') }}|{{ x|string }}|{{ x|length }}|{{ x|list }}|{{ x|trim }}|{{ x|upper }}|{{ x|first }}|{{ x|join(',') }}|{{ x|items|list }}")
case("undefined_int_error", "{{ x|int }}")
case("undefined_tojson_error", "{{ x|tojson }}")
case("undefined_call_error", "{{ x() }}")
case("undefined_bool", "{% if x %}t{% else %}f{% endif %}{{ not x }}")
case("undefined_iter", "{% for a in x %}{{ a }}{% endfor %}{{ x|length }}")

# ---- filters ---------------------------------------------------------------------------
case("f_abs", "{{ -5|abs }} {{ (-2.5)|abs }} {{ 3|abs }}")
case("f_attr", "{{ d|attr('a') }}|{{ d|attr('items') is callable }}|{{ ns|attr('x') }}", d={"a": 1})
case("f_batch", "{{ [1, 2, 3, 4, 5]|batch(2)|list }} {{ [1, 2, 3]|batch(2, 'x')|list }}")
case("f_capitalize", "{{ 'hELLO wORLD'|capitalize }} {{ 'ǆemal'|capitalize }} {{ 'ßa'|capitalize }}")
case("f_center", "[{{ 'ab'|center(7) }}][{{ 'abc'|center(8) }}][{{ 'x'|center }}]")
case("f_count_length", "{{ 'héllo'|length }} {{ [1, 2]|count }} {{ {'a': 1}|length }} {{ ''|length }}")
case("f_length_generator_error", "{{ [1, 2]|select|length }}")
case("f_default", "{{ x|default('a') }} {{ ''|default('b') }} {{ ''|default('c', true) }} {{ 0|d('z', boolean=true) }} {{ none|default('n') }} {{ x|d }}|")
case("f_dictsort", "{{ d|dictsort }} {{ d|dictsort(reverse=true) }} {{ d|dictsort(by='value') }} {{ d|dictsort(true) }}", d={"b": 2, "A": 3, "c": 1})
case("f_dictsort_bad_by", "{{ {'a': 1}|dictsort(by='x') }}")
case("f_escape", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|safe|e }} {{ '<i>'|forceescape }}")
case("f_first_last", "{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} {{ 'abc'|last }} {{ []|first }}| {{ {'a': 1, 'b': 2}|last }}")
case("f_last_generator_error", "{{ [1]|select|last }}")
case("f_float", "{{ '3.5'|float }} {{ 'x'|float }} {{ 'x'|float(1.5) }} {{ 2|float }} {{ '1e3'|float }} {{ ' 7 '|float }} {{ 'nan'|float }} {{ '1_0'|float }} {{ none|float }}")
case("f_int", "{{ '42'|int }} {{ '42.9'|int }} {{ 3.99|int }} {{ -3.99|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '0x1A'|int(0, 16) }} {{ 'ff'|int(base=16) }} {{ '0b11'|int(0, 0) }} {{ true|int }} {{ ' 12 '|int }} {{ '1_000'|int }} {{ none|int }}")
case("f_format", "{{ '%s-%d'|format('a', 3) }} {{ '%(x)s!'|format(x=1) }} {{ '%5.1f|%-4s|'|format(3.14159, 'ab') }}")
case("f_format_both_error", "{{ '%s'|format(1, x=2) }}")
case("f_indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb\\n'|indent(2, blank=true) }}|{{ 'x\\ny'|indent('> ') }}|{{ ''|indent(first=true) }}|{{ 'a\\r\\nb'|indent(1) }}")
case("f_items", "{{ d|items|list }} {% for k, v in d|items %}{{ k }}{{ v }}{% endfor %}", d={"b": 1, "a": [2]})
case("f_items_not_mapping", "{{ [1]|items|list }}")
case("f_join", "{{ [1, 'a', none]|join }} {{ ['a', 'b']|join(', ') }} {{ users|join('/', attribute='name') }} {{ 'abc'|join('-') }}", users=[{"name": "x"}, {"name": "y"}])
case("f_list", "{{ 'ab'|list }} {{ {'k': 1}|list }} {{ (1, 2)|list }} {{ range(3)|list }}")
case("f_lower_upper", "{{ 'HeLLo ÄÖ ΣΑΣ'|lower }} {{ 'straße ǆ'|upper }} {{ 'İ'|lower|length }}")
case("f_map", "{{ users|map(attribute='name')|list }} {{ users|map(attribute='age', default=0)|list }} {{ ['a', 'B']|map('upper')|list }} {{ [1.2, 3.7]|map('round', 0)|list }} {{ [[1, 2]]|map('join', '-')|list }}",
     users=[{"name": "a", "age": 3}, {"name": "b"}])
case("f_map_nested_attr", "{{ xs|map(attribute='a.b')|list }} {{ xs|map(attribute='c.0')|list }}", xs=[{"a": {"b": 1}, "c": [9]}])
case("f_map_unknown_filter", "{{ [1]|map('nosuch')|list }}")
case("f_map_unknown_filter_empty", "{{ []|map('nosuch')|list }}")
case("f_max_min", "{{ [3, 1, 2]|max }} {{ [3, 1, 2]|min }} {{ ['b', 'A', 'c']|max }} {{ ['b', 'A', 'c']|max(case_sensitive=true) }} {{ users|min(attribute='age') }} {{ []|max }}|",
     users=[{"age": 5}, {"age": 2}])
case("f_reject_select", "{{ [0, 1, 2, none, '']|select|list }} {{ [0, 1, 2]|reject|list }} {{ range(10)|select('odd')|list }} {{ range(10)|reject('divisibleby', 3)|list }} {{ [1, 5, 9]|select('>', 4)|list }} {{ ['a', 1]|select('string')|list }}")
case("f_select_unknown_test", "{{ [1]|select('nosuch')|list }}")
case("f_select_unknown_test_empty", "{{ []|select('nosuch')|list }}")
case("f_selectattr", "{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ ms|rejectattr('role', 'eq', 'user')|list|length }} {{ ms|selectattr('extra')|list|length }} {{ ms|selectattr('extra', 'defined')|list|length }} {{ ms|selectattr('role', 'in', ['system', 'user'])|list|length }}",
     ms=[{"role": "user", "content": "a"}, {"role": "system", "content": "b", "extra": 1}, {"role": "user", "content": "c"}])
case("f_selectattr_truthy_generator", "{% if xs|selectattr('a', 'eq', 9) %}T{% else %}F{% endif %}", xs=[{"a": 1}])
case("f_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }} {{ 'abc'|replace('', '-', 2) }} {{ 123|replace(2, 9) }}")
case("f_reverse", "{{ 'héllo'|reverse }} {{ [1, 2, 3]|reverse|list }} {{ (1, 2)|reverse|list }} {{ {'a': 1, 'b': 2}|reverse|list }} {{ range(3)|reverse|list }} {{ [1, 2]|select|reverse }}")
case("f_reverse_truthy", "{% if []|reverse %}T{% endif %}")
case("f_round", "{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 3.14159|round(3) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 5|round }} {{ 1234.5|round(-2) }} {{ -0.5|round }}")
case("f_round_undefined_error", "{{ undef|round }}")
case("f_abs_undefined_error", "{{ undef|abs }}")
case("f_markup_items", "{{ [('ab'|safe)[0]] }}{{ [('ab'|safe)[:1]] }}{{ [('ab'|safe)|first] }}{{ [('ab'|safe)|last] }}{% for c in 'ab'|safe %}{{ [c] }}{% endfor %}")
case("f_indent_non_string_errors", "{{ [1]|indent }}")
case("f_indent_bool_error", "{{ true|indent }}")
case("f_indent_tuple_error", "{{ (1,)|indent }}")
case("f_truncate_short_list", "{{ [1, 2]|truncate(5) }}{{ {'a': 1}|truncate(5) }}")
case("f_truncate_long_list_error", "{{ range(20)|list|truncate(5) }}")
case("in_undefined_in_string_error", "{{ undef in 'abc' }}")
case("f_round_bad_method", "{{ 1.5|round(0, 'up') }}")
case("f_safe", "{{ '<b>'|safe }} {{ ('<b>'|safe) is escaped }} {{ '<b>' is escaped }} {{ ('a'|safe) + '<' }} {{ '<' + ('a'|safe) }}")
case("f_slice", "{{ range(7)|slice(3)|list }} {{ range(7)|slice(3, 'x')|list }}")
case("f_sort", "{{ [3, 1, 2]|sort }} {{ ['b', 'A', 'a', 'B']|sort }} {{ ['b', 'A', 'a']|sort(case_sensitive=true) }} {{ [3, 1, 2]|sort(reverse=true) }} {{ users|sort(attribute='age')|map(attribute='n')|list }} {{ users|sort(attribute='age,n')|map(attribute='n')|list }}",
     users=[{"n": "x", "age": 3}, {"n": "b", "age": 1}, {"n": "a", "age": 3}])
case("f_sort_stable_reverse", "{{ items|sort(attribute='k', reverse=true)|map(attribute='v')|join }}", items=[{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 1, "v": "c"}, {"k": 2, "v": "d"}])
case("f_sort_mixed_error", "{{ [1, 'a']|sort }}")
case("f_string", "{{ 1|string }} {{ none|string }} {{ [1]|string }} {{ 1.0|string }} {{ (1|string) is string }}")
case("f_sum", "{{ [1, 2, 3]|sum }} {{ [1.5, 2]|sum }} {{ users|sum(attribute='n') }} {{ [1]|sum(start=10) }} {{ []|sum }}", users=[{"n": 2}, {"n": 5}])
case("f_sum_str_error", "{{ ['a', 'b']|sum }}")
case("f_title", "{{ 'hello world-foo (bar) [baz] {q} <x>y'|title }} {{ \"it's o'neil\"|title }} {{ 'ßtraße'|title }} {{ 'ABC dEF'|title }}")
case("f_tojson", "{{ {'b': 1, 'a': [1, 2.5, none, true, 'é\"\\n\\t\\u2028\\x01']}|tojson }}")
case("f_tojson_indent", "{{ {'a': [1, {}], 'b': [], 'c': {'d': 'x'}}|tojson(indent=2) }}|{{ [1]|tojson(indent=0) }}|{{ {'a': 1}|tojson(indent='\\t') }}")
case("f_tojson_options", "{{ 'é'|tojson(ensure_ascii=true) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ {'a': [1, 2]}|tojson(separators=(',', ':')) }} {{ 'x'|tojson(4) }} {{ '😀'|tojson(true) }}")
case("f_tojson_numbers", "{{ [1, 1.0, 1e16, 1.5e-7, -0.0, 3.14159, 100, 2 ** 40]|tojson }}")
case("f_tojson_keys", "{{ {1: 'a', 1.5: 'b', true: 'c', none: 'd'}|tojson }}")
case("f_tojson_tuple_key_error", "{{ {(1, 2): 'a'}|tojson }}")
case("f_tojson_namespace_error", "{{ namespace(a=1)|tojson }}")
case("f_tojson_tools", "{% for t in tools %}{{ t|tojson }}\n{{ t.function|tojson(indent=4) }}{% endfor %}", tools=TOOLS)
case("f_trim", "[{{ '  a b \\n'|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '\\u3000wide\\u00a0'|trim }}]")
case("f_truncate", "{{ 'hello there you'|truncate(9) }}|{{ 'hello there you'|truncate(9, true) }}|{{ 'hello there you'|truncate(11, end='!') }}|{{ 'short'|truncate(3, leeway=5) }}|{{ 'a b c d e f g h'|truncate(5, leeway=0) }}")
case("f_unique", "{{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A']|unique(case_sensitive=true)|list }} {{ users|unique(attribute='g')|map(attribute='n')|list }}", users=[{"g": 1, "n": "a"}, {"g": 1, "n": "b"}, {"g": 2, "n": "c"}])
case("f_wordcount", "{{ 'Hello, world! it's 2 o\\'clock_now'|wordcount }} {{ 'héllo wörld'|wordcount }}")
case("f_unknown_compile_error", "{{ x|nosuch }}")
case("f_unknown_in_loop_error", "{% for x in [] %}{{ x|nosuch }}{% endfor %}ok")
case("f_unknown_in_if_ok", "{% if false %}{{ x|nosuch }}{% endif %}ok")
case("f_unknown_in_if_loop_error", "{% if false %}{% for x in [] %}{{ x|nosuch }}{% endfor %}{% endif %}ok")
case("f_unknown_in_condexpr_ok", "{{ x|nosuch if false else 1 }}")
case("f_unknown_in_if_runtime_error", "{% if true %}{{ 1|nosuch }}{% endif %}")
case("f_strip_is_not_a_filter", "{{ ' a '|strip }}")

# ---- tests -----------------------------------------------------------------------------
case("t_types", "{% for v in values %}{{ v is string }}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is boolean }}{{ v is mapping }}{{ v is sequence }}{{ v is iterable }}{{ v is none }}{{ v is callable }}|{% endfor %}",
     values=["s", 1, 1.5, True, None, [1], {"a": 1}])
case("t_true_false", "{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 is false }}{{ none is none }}")
case("t_numbers", "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}{{ 3.0 is odd }}{{ -3 is odd }}")
case("t_odd_str_error", "{{ 'a' is odd }}")
case("t_compare", "{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 1 is ne 2 }}{{ 2 is gt 1 }}{{ 2 is greaterthan 3 }}{{ 2 is ge 2 }}{{ 1 is lt 2 }}{{ 1 is lessthan 0 }}{{ 1 is le 1 }}{{ 1 is == 1 }}{{ 1 is != 1 }}{{ 1 is < 2 }}")
case("t_in", "{{ 'a' is in 'cat' }}{{ 2 is in [1, 2] }}{{ 'x' is in {'x': 1} }}{{ 3 is not in [1] }}")
case("t_lower_upper", "{{ 'abc' is lower }}{{ 'aBc' is lower }}{{ 'ABC' is upper }}{{ '1' is upper }}")
case("t_sameas", "{{ none is sameas none }}{{ true is sameas true }}{{ 1 is sameas 1 }}{{ x is sameas x }}{{ [] is sameas [] }}", x=[1])
case("t_filter_test", "{{ 'upper' is filter }}{{ 'nosuch' is filter }}{{ 'odd' is test }}{{ 'nosuch' is test }}")
case("t_escaped", "{{ ('a'|safe) is escaped }}{{ 'a' is escaped }}{{ ('<'|e) is escaped }}")
case("t_defined_chain", "{{ d.a is defined }}{{ d.b is defined }}{{ d.a.b is defined }}", d={"a": 1})
case("t_negated", "{{ 1 is not string }}{{ x is not none }}", x=None)
case("t_unknown_compile_error", "{{ x is nosuch }}")
case("t_unknown_in_if_runtime_error", "{% if x is nosuch %}{% endif %}")
case("t_unknown_in_untaken_if", "{% if false %}{% if x is nosuch %}{% endif %}{% endif %}ok")
case("t_chained_is_error", "{{ x is defined is defined }}")

# ---- methods ---------------------------------------------------------------------------
case("m_strip", "[{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}][{{ 'xxyx'.strip('x') }}][{{ '\\n\\nab\\n'.strip('\\n') }}][{{ 'abc'.rstrip('cb') }}]", s="  pad  ")
case("m_split", "{{ 'a,b,,c'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(none, 1) }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}{{ '  a b  c  '.rsplit(none, 1) }}{{ ''.split() }}{{ ''.split(',') }}{{ 'x</think>y</think>z'.split('</think>')[-1] }}")
case("m_split_empty_sep", "{{ 'x'.split('') }}")
case("m_splitlines", "{{ 'a\\nb\\r\\nc\\rd\\n'.splitlines() }}{{ 'a\\nb'.splitlines(true) }}{{ 'x\\u2028y'.splitlines() }}")
case("m_startswith", "{{ 'hello'.startswith('he') }}{{ 'hello'.endswith('lo') }}{{ 'hello'.startswith(('x', 'h')) }}{{ 'hello'.startswith('l', 2) }}{{ 'hello'.endswith('ell', 0, 4) }}{{ ''.startswith('') }}")
case("m_case", "{{ 'hello World'.upper() }}{{ 'ABC'.lower() }}{{ 'hello world'.title() }}{{ \"they're bill's\".title() }}{{ 'hELLO'.capitalize() }}{{ 'AbC'.swapcase() }}")
case("m_replace", "{{ 'a-b-c'.replace('-', '+') }}{{ 'a-b-c'.replace('-', '+', 1) }}")
case("m_find", "{{ 'hello'.find('l') }}{{ 'hello'.rfind('l') }}{{ 'hello'.find('z') }}{{ 'héllo'.find('l') }}{{ 'hello'.count('l') }}{{ 'hello'.index('e') }}{{ 'aaa'.count('') }}{{ 'hello'.find('l', 3) }}")
case("m_index_error", "{{ 'hello'.index('z') }}")
case("m_join", "{{ ', '.join(['a', 'b']) }}{{ '-'.join('xyz') }}")
case("m_join_type_error", "{{ ','.join([1, 2]) }}")
case("m_pad", "[{{ 'ab'.ljust(5) }}][{{ 'ab'.rjust(5, '*') }}][{{ 'ab'.center(5) }}][{{ '42'.zfill(5) }}][{{ '-42'.zfill(5) }}]")
case("m_partition", "{{ 'a=b=c'.partition('=') }}{{ 'a=b=c'.rpartition('=') }}{{ 'abc'.partition('x') }}")
case("m_predicates", "{{ '123'.isdigit() }}{{ 'abc'.isalpha() }}{{ 'a1'.isalnum() }}{{ ' \\t'.isspace() }}{{ 'abc'.islower() }}{{ 'ABC'.isupper() }}{{ 'Hello World'.istitle() }}{{ ''.isdigit() }}{{ '²'.isdigit() }}{{ '²'.isdecimal() }}{{ 'x_1'.isidentifier() }}")
case("m_remove_affix", "{{ 'prefix-body'.removeprefix('prefix-') }}{{ 'body.txt'.removesuffix('.txt') }}")
case("m_format", "{{ '{} {}'.format(1, 'a') }}|{{ '{0}{1}{0}'.format('x', 'y') }}|{{ '{name}'.format(name='n') }}|{{ '{:>6}|{:<4}|{:^7}'.format('a', 'b', 'c') }}|{{ '{:.2f}|{:5d}|{:05.1f}|{:x}|{:#b}|{:,}'.format(3.14159, 42, 2.5, 255, 5, 1234567) }}|{{ '{!r}'.format('q') }}|{{ '{{literal}}'.format() }}")
case("m_format_attr", "{{ '{0[role]}: {0[content]}'.format(m) }}|{{ '{m.role}'.format(m=m) }}", m={"role": "user", "content": "hi"})
case("m_format_floats", "{{ '{}'.format(1.0) }} {{ '{:g}'.format(1e-5) }} {{ '{:.3}'.format(1.0) }} {{ '{:e}'.format(12345.678) }} {{ '{:%}'.format(0.25) }} {{ '{:+d}'.format(5) }} {{ '{:.3}'.format(1234.5) }}")
case("m_dict", "{{ d.get('a') }}{{ d.get('z') }}{{ d.get('z', 'dflt') }}{{ d.keys()|list }}{{ d.values()|list }}{{ d.items()|list }}{{ d.copy() }}", d={"a": 1, "b": 2})
case("m_dict_update_error", "{{ d.update({'x': 1}) }}", d={})
case("m_dict_pop_error", "{{ d.pop('a') }}", d={"a": 1})
case("m_list_methods", "{{ xs.index(2) }}{{ xs.count(1) }}{{ xs.copy() }}", xs=[1, 2, 1])
case("m_list_append_error", "{{ xs.append(1) }}", xs=[])
case("m_list_append_print", "{{ xs.append }}|", xs=[])
case("m_unknown_method_undefined", "{{ 'x'.nosuch }}|{{ 'x'.nosuch is defined }}")
case("m_unknown_method_call_error", "{{ 'x'.nosuch() }}")

# ---- globals ---------------------------------------------------------------------------
case("g_range", "{{ range(4)|list }}{{ range(2, 5)|list }}{{ range(10, 0, -3)|list }}{{ range(0)|list }}{{ range(3)|length }}{{ range(5)[-1] }}")
case("g_range_float_error", "{{ range(1.5) }}")
case("g_range_step_zero", "{{ range(1, 2, 0) }}")
case("g_range_huge", "{% for i in range(1000000) %}{% endfor %}")
case("g_range_max", "{{ range(100000)|length }}")
case("g_dict", "{{ dict(a=1, b=2) }}{{ dict([('x', 1)]) }}{{ dict({'k': 'v'}, z=0) }}{{ dict() }}{{ dict.fromkeys(['a', 'b']) }}{{ dict.fromkeys('xy', 0) }}")
case("g_raise_exception", "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}", messages=MSGS)
case("g_strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %d %b %j %p %I %%') }}|{{ strftime_now('%d %B %Y') }}|{{ strftime_now('') }}|{{ strftime_now('%f%z%Z') }}")
case("g_cycler_joiner", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner('|') %}{% for x in [1, 2, 3] %}{{ j() }}{{ x }}{% endfor %}")
case("g_namespace_print", "{{ namespace(a=[1], b='x') }}")

# ---- Python formatting -------------------------------------------------------------------
case("pct_format", "{{ '%s|%r|%d|%i|%5d|%-5d|%05d|%+d|% d|%x|%X|%#x|%o|%#o|%c|%%' % ('s', 's', 42, 3.9, 42, 42, 42, 5, 5, 255, 255, 255, 8, 8, 65) }}")
case("pct_floats", "{{ '%f|%.2f|%10.3f|%-10.1f|%e|%.2E|%g|%G|%+.1f|%08.2f' % (3.14159, 3.14159, 3.14159, 3.14159, 12345.678, 12345.678, 0.00001, 1e20, 2.5, -3.14159) }}")
case("pct_single_and_mapping", "{{ '%s!' % 'x' }}{{ '%s' % [1, 2] }}{{ '%(a)s-%(b)d' % {'a': 'x', 'b': 3} }}{{ '%.3s' % 'abcdef' }}{{ '%*d' % (5, 3) }}")
case("pct_mapping_like", "{{ 'abc' % [1] }}|{{ 'abc' % undef }}|{{ '%s' % undef }}|{{ 'abc' % range(2) }}|{{ 'abc' % {'a': 1} }}")
case("pct_undefined_key_error", "{{ '%(a)s' % undef }}")
case("pct_list_key_error", "{{ '%(a)s' % [1] }}")
case("pct_not_all_converted", "{{ 'abc' % 5 }}")
case("pct_too_few", "{{ '%s %s' % ('a',) }}")
case("pct_too_many", "{{ '%s' % ('a', 'b') }}")
case("pct_bad_type", "{{ '%d' % 'a' }}")

# ---- whitespace control ------------------------------------------------------------------
case("ws_trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter")
case("ws_lstrip_blocks", "line\n    {% if true %}\n    indented\n    {% endif %}\nend")
case("ws_lstrip_not_for_vars", "a\n    {{ 'x' }}\n    {% if true %}y{% endif %}")
case("ws_lstrip_mid_line", "text {% if true %}x{% endif %} text")
case("ws_dash_both", "a   {%- if true -%}   b   {%- endif -%}   c")
case("ws_dash_vars", "a \n {{- 'x' -}} \n b")
case("ws_dash_newlines", "x\n\n\n{%- for i in [1, 2] %}\n  {{ i }}\n{%- endfor %}\n\ny")
case("ws_plus_lstrip", "line\n    {%+ if true %}kept{% endif %}")
case("ws_plus_trim", "{% if true +%}\nkept newline{% endif %}")
case("ws_comment_trim", "a\n  {# c #}\nb")
case("ws_comment_dash", "a  {#- c -#}  b")
case("ws_block_at_start", "   {% if true %}x{% endif %}")
case("ws_tabs", "\t{% if true %}\n\tx\n\t{% endif %}\ny")
case("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n")
case("ws_cr_only", "a\r{% if true %}\rb{% endif %}\rc")
case("ws_trailing_newline", "text\n")
case("ws_trailing_newlines", "text\n\n")
case("ws_only_one_newline_trimmed", "{% if true %}\n\nx{% endif %}")
case("ws_unicode_space_dash", "a\u3000\u00a0{%- if true %}b{% endif %}")
case("ws_unicode_space_lstrip", "a\n\u3000{% if true %}b{% endif %}")
case("ws_set_trim", "{% set x = 1 %}\n{% set y = 2 %}\n{{ x }}{{ y }}")
case("ws_macro_trim", "{% macro m() %}\n  body\n{% endmacro %}\n[{{ m() }}]")
case("ws_chat_style", "{%- for m in messages %}\n    {{- '<|' + m.role + '|>\\n' + (m.content if m.content is string else m.content|map(attribute='text')|join) }}\n    {%- if not loop.last %}\n        {{- '\\n' }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|assistant|>\\n' }}\n{%- endif %}\n",
     messages=MSGS, add_generation_prompt=True)
case("ws_var_end_newline", "{{ 'a' }}\n{{ 'b' }}\n")

# ---- JSON in: int/float kept apart, escapes around numbers, key order, duplicates
case("json_numbers_and_escapes", "{{ d|tojson }}|{{ d.n + 1 }}|{{ d.f }}|{{ d.big }}|{{ d.neg }}",
     d={"s": "q\"1\\", "n": 5, "t": "\\\"2", "f": 2.0, "e": 1e-7, "big": 2 ** 62, "neg": -3, "l": [1, 1.5, "3"]})
case("json_unicode_keys", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", d={"é": 1, "日本": [2], "z": None})

# ---- messages as transformers passes them -------------------------------------------------
case("messages_normalized", "{% for m in messages %}{{ m }}\n{% endfor %}", messages=MSGS)
case("messages_thinking_alias", "{% for m in messages %}{{ m.thinking }}|{{ m.reasoning_content }}|{{ m.keys()|list }}\n{% endfor %}",
     messages=[{"role": "assistant", "thinking": "t1", "content": "c"}, {"role": "assistant", "reasoning": "r", "reasoning_content": None, "content": "c"}])

# ---- bad templates -------------------------------------------------------------------------
case("bad_unclosed_if", "{% if true %}never closed")
case("bad_unclosed_for", "{% for x in y %}{% if x %}{% endif %}")
case("bad_unclosed_var", "{{ 1 + ")
case("bad_unclosed_comment", "{# never")
case("bad_unclosed_string", "{{ 'abc }}")
case("bad_unclosed_raw", "{% raw %}abc")
case("bad_end_without_start", "{% endfor %}")
case("bad_mismatched_end", "{% for x in y %}{% endif %}")
case("bad_unknown_tag", "{% frobnicate %}")
case("bad_do_tag", "{% do x.append(1) %}")
case("bad_unexpected_char", "{{ 1 $ 2 }}")
case("bad_empty_expression", "{{ }}")
case("bad_bracket_mismatch", "{{ (1, 2] }}")
case("bad_else_twice", "{% if x %}{% else %}{% else %}{% endif %}")
case("bad_assign_const", "{% set true = 1 %}")
case("bad_macro_default_order", "{% macro m(a=1, b) %}{% endmacro %}")
case("bad_include", "{% include 'other.jinja' %}")
case("bad_extends", "{% extends 'base.jinja' %}")
case("bad_deep_recursion", "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}")
case("bad_deep_recursion_nested_expressions",
     "{% macro m(n) %}{% if n > 0 %}{{ " + "1 + (" * 40 + "m(n - 1)|int" + ")" * 40 + " }}{% endif %}{% endmacro %}{{ m(300) }}")
case("bad_call_non_callable", "{{ 'abc'() }}")
case("bad_unpack_non_iterable", "{% for a, b in [1] %}{% endfor %}")
case("bad_iterate_int", "{% for x in 5 %}{% endfor %}")
case("bad_dict_unhashable_key", "{{ {[1]: 2} }}")
ours_only("limit_iterations", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
          "LimitError: more than 1000000 loop iterations", limits={"max_iterations": 1000000})
ours_only("limit_output", "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "LimitError", limits={"max_output": 1 << 20})
ours_only("limit_string_repeat", "{{ 'x' * 100000000000 }}", "LimitError")
ours_only("limit_depth", "{% macro m(n) %}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(100) }}", "RecursionError", limits={"max_depth": 50})
ours_only("limit_memory", "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "Limit", limits={"max_memory": 64 << 20})
ours_only("limit_nesting", "{{ " + "(" * 300 + "1" + ")" * 300 + " }}", "nested too deeply")
ours_only("refuse_groupby", "{{ [1]|groupby('x') }}", "the filter 'groupby' is not implemented")
ours_only("refuse_int_attribute", "{{ (5).bit_length() }}", "is not implemented")
ours_only("refuse_big_int", "{{ 2 ** 70 }}", "OverflowError")


def main():
    binary, work = sys.argv[1], sys.argv[2]
    try:
        import jinja_env
    except ImportError as e:
        print(f"SKIP: the jinja2 oracle cannot be imported ({e}); install tools/requirements.txt")
        return 77
    os.environ["CHAT_TEMPLATE_NOW"] = NOW
    env = jinja_env.make_env()
    os.makedirs(work, exist_ok=True)
    payload, expected = [], []
    for name, template, variables, opts in CASES:
        # each variable as its own JSON text, so that the engine's JSON reader sees what
        # Python wrote (2.0 stays a float, 2**62 an int)
        item = {"template": template, "vars": {k: json.dumps(v, ensure_ascii=False) for k, v in variables.items()}}
        if opts.get("limits"):
            item["limits"] = opts["limits"]
        payload.append(item)
        if opts.get("ours_only"):
            expected.append(("ours_only", opts["ours_only"]))
            continue
        try:
            expected.append(("ok", jinja_env.render(env, template, variables)))
        except Exception as e:  # the oracle raised: ours must fail with the same class
            expected.append(("error", type(e).__name__, str(e)))
    path = os.path.join(work, "cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, ensure_ascii=False)
    r = subprocess.run([binary, path], capture_output=True, env=dict(os.environ))
    if r.returncode != 0:
        print(f"FAIL: chat-cases exited {r.returncode}: {r.stderr.decode(errors='replace')}")
        return 1
    results = json.loads(r.stdout)
    failed = 0
    for (name, template, _, _), want, got in zip(CASES, expected, results):
        if want[0] == "ok":
            if not got["ok"]:
                print(f"FAIL {name}: jinja2 rendered {want[1]!r}, ours failed: {got['error']}")
                failed += 1
            elif got["text"] != want[1]:
                print(f"FAIL {name}:\n  template {template!r}\n  want {want[1]!r}\n  got  {got['text']!r}")
                failed += 1
        elif want[0] == "error":
            if got["ok"]:
                print(f"FAIL {name}: jinja2 raised {want[1]}: {want[2]}; ours rendered {got['text']!r}")
                failed += 1
            elif want[1] + ":" not in got["error"]:
                print(f"FAIL {name}: jinja2 raised {want[1]}: {want[2]}; ours failed differently: {got['error']}")
                failed += 1
        else:
            if got["ok"] or want[1] not in got["error"]:
                print(f"FAIL {name}: expected an error containing {want[1]!r}, got {got}")
                failed += 1
    n_err = sum(1 for w in expected if w[0] == "error")
    print(f"{len(CASES)} cases ({n_err} raise in jinja2, {sum(1 for w in expected if w[0] == 'ours_only')} "
          f"check our limits): {len(CASES) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
