"""The oracle: jinja2 configured the way Hugging Face transformers configures it for chat
templates (transformers' utils/chat_template_utils.py): an ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, the loopcontrols extension, the {% generation %}
tag, tojson as json.dumps(ensure_ascii=False), and the globals raise_exception,
strftime_now, dict and namespace (which refuses "_" attributes).

strftime_now reads CHAT_TEMPLATE_NOW (YYYY-MM-DDTHH:MM:SS) when it is set, as the
engine under test does, so that both see the same moment."""
import json
import os
from datetime import datetime

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %}: renders its body (transformers only records
    where it is when asked for an assistant mask)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_render_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _strftime_now(fmt):
    fixed = os.environ.get("CHAT_TEMPLATE_NOW")
    now = datetime.fromisoformat(fixed) if fixed else datetime.now()
    return now.strftime(fmt)


class _Dict:
    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        return dict.fromkeys(*args, **kwargs)


class _Namespace(jinja2.utils.Namespace):
    def __init__(*args, **kwargs):
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        _Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"Chat templates cannot store underscore-prefixed attributes on a namespace, "
                f"but got {name!r}. Please rename the attribute.")


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _Dict()
    env.globals["namespace"] = _Namespace
    return env


def normalize_messages(messages):
    """transformers drops null-valued keys and aliases the reasoning fields."""
    out = []
    for m in messages:
        m = {k: v for k, v in m.items() if v is not None}
        reasoning = next((m[k] for k in ("reasoning_content", "thinking", "reasoning")
                          if m.get(k) is not None), None)
        if reasoning is not None:
            m = {"thinking": reasoning, **m, "reasoning_content": reasoning}
        out.append(m)
    return out


def render(env, source, variables):
    variables = dict(variables)
    if "messages" in variables:
        variables["messages"] = normalize_messages(variables["messages"])
    return env.from_string(source).render(**variables)
