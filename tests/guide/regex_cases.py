#!/usr/bin/env python3
"""The regex match table of tests/unit/test_guide_lexer.c, with llguidance as the oracle.

    python3 tests/guide/regex_cases.py            # prints the C rows (paste between the
                                                  # BEGIN/END CASES markers)
    python3 tests/guide/regex_cases.py --check    # checks the rows in the C file against
                                                  # llguidance; exit 1 on a difference

llguidance answers whether its regex grammar accepts a whole string: the string's GPT-2
tokens are consumed one by one and the matcher must be accepting at the end. A pattern
llguidance refuses is listed in ERRORS (ours must refuse it too; the C test checks our
column and reason)."""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
C_FILE = os.path.join(ROOT, 'tests', 'unit', 'test_guide_lexer.c')
TOKENIZER = os.path.join(ROOT, '..', 'shared', 'models', 'ortgenai', 'hf-internal-testing',
                         'tiny-random-gpt2-fp32', 'tokenizer.json')

# (pattern, strings): each string is checked against the pattern.
CASES = [
    (r'abc', ['abc', 'ab', 'abcd', '']),
    (r'[a-z]+[0-9]?', ['abc', 'abc1', 'abc12', '', '1']),
    (r'a|bc|', ['a', 'bc', '', 'b']),
    (r'(ab|c)*', ['', 'abab', 'abcab', 'aba']),
    (r'a{3}', ['aaa', 'aa', 'aaaa']),
    (r'a{2,4}', ['a', 'aa', 'aaaa', 'aaaaa']),
    (r'a{2,}', ['a', 'aa', 'aaaaaaa']),
    (r'a{ 2 }', ['aa', 'a']),
    (r'(?:ab){2}?c+?', ['ababc', 'abcc', 'ababccc']),
    (r'x*?y??z+?', ['z', 'xxyz', 'yy z']),
    (r'a**', ['', 'aaa']),
    (r'.', ['a', '\n', 'é', '中', '\U0001F600', 'ab']),
    (r'(?s).', ['\n', 'a']),
    (r'(?s:.)\.', ['\n.', 'aa']),
    (r'[^a]', ['b', 'a', '\n', 'é']),
    (r'[]a]', [']', 'a', 'b']),
    (r'[a-]', ['-', 'a', 'b']),
    (r'[-a-c]', ['-', 'b', 'd']),
    (r'[\d]+', ['123', '١٢', 'a']),
    (r'\d', ['5', '٣', '०', 'a', '²']),
    (r'\d{3}', ['١٢٣', '12a']),
    (r'\D', ['a', '5', '٣']),
    (r'\w+', ['abc_1', 'é', '٣', 'Ⓐ', 'a-b', 'α']),
    (r'\W', [' ', '-', 'a', '\n']),
    (r'\s', [' ', '\t', '\n', '\u3000', '\u0085', '\u00a0', 'a']),
    (r'\S', ['a', ' ']),
    (r'\p{L}+', ['αβγ', 'abc', 'a1', '中文']),
    (r'\pL', ['a', '1']),
    (r'\p{Lu}', ['A', 'a', 'Σ']),
    (r'\p{lu}', ['A', 'a']),
    (r'\p{Letter}', ['a', '1']),
    (r'\p{Uppercase_Letter}', ['Q', 'q']),
    (r'\p{gc=Nd}', ['٣', 'x']),
    (r'\p{N}', ['5', '½', 'Ⅻ', 'a']),
    (r'\P{L}', ['5', 'a']),
    (r'\p{Any}', ['a', '\n', '中']),
    (r'\p{P}+', ['!?', ',', 'a']),
    (r'\p{Sc}', ['$', '€', 'a']),
    (r'\p{Zs}', [' ', '\u3000', '\t']),
    (r'[α-ω]+', ['αβω', 'Α', 'a']),
    (r'[^α-ω]', ['a', 'β']),
    (r'[\p{L}&&\p{Lu}]', ['A', 'a']),
    (r'[a-z&&[^m]]', ['a', 'm']),
    (r'[a-z--[aeiou]]', ['b', 'e']),
    (r'[a-c~~b-d]', ['a', 'd', 'b']),
    (r'[[:alpha:]]+', ['abC', 'a1']),
    (r'[[:^digit:]]', ['a', '1']),
    (r'[[:xdigit:]]{2}', ['fF', 'fg']),
    (r'(?i)k', ['k', 'K', '\u212a', 'x']),
    (r'(?i)ß', ['ß', 'ẞ', 'ss']),
    (r'(?i)hello', ['HeLLo', 'hello', 'help']),
    (r'(?i:a)b', ['Ab', 'AB']),
    (r'(?i)a(?-i)b', ['Ab', 'AB']),
    (r'(?i)[a-c]+', ['AbC', 'd']),
    (r'(?i)[^a]', ['A', 'b']),
    (r'(?i)σ', ['Σ', 'ς', 'σ']),
    (r'(?i)é', ['É', 'e']),
    (r'(?i)i', ['I', 'i', '\u0131', '\u0130']),
    (r'(?i)s', ['S', '\u017f', 'x']),
    (r'(?i)[k-l]', ['\u212a', 'L']),
    (r'(?i)\u{1C5}', ['\u01c4', '\u01c6', 'D']),
    (r'', ['', 'a']),
    (r'(?x) a b # comment', ['ab', 'a b']),
    (r'(?x)a\ b', ['a b', 'ab']),
    (r'\x41\x{42}\u0043\u{44}\U00000045', ['ABCDE']),
    (r'\x{1F600}', ['\U0001F600', 'a']),
    (r'\n\t\r\f\v\a', ['\n\t\r\f\v\a']),
    (r'\.\+\*\?\(\)\|\[\]\{\}\^\$\#\&\-\~\\', ['.+*?()|[]{}^$#&-~\\']),
    (r'\%\ \/', ['% /']),
    (r'(?P<year>\d{4})-(?<m>\d\d)', ['2024-01', '2024-1']),
    (r'^abc$', ['abc', 'xabc']),
    (r'^a|^b', ['a', 'b']),
    (r'(^a)', ['a']),
    (r'a$|b', ['a', 'b']),
    (r'\Aa\z', ['a']),
    (r'()', ['', 'a']),
    (r'[0-9]{1,3}(\.[0-9]{1,3}){3}', ['192.168.0.1', '1.2.3', '1234.1.1.1']),
    (r'"([^"\\]|\\.)*"', ['"a\\"b"', '"a"b"', '""']),
    (r'-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?', ['-0.5e10', '01', '1.', '12']),
    (r'"(\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}|[^"\\\x00-\x1f])*"',
     ['"a\\n\\u00e9é"', '"a\nb"', '"\\x"', '"\\"']),
    (r'[^"\\\x00-\x1F\x7F]{2,5}', ['ab', 'a\x7f', 'abcdef', 'αβγ']),
    (r'\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})',
     ['2024-01-02T03:04:05Z', '2024-01-02T03:04:05.123+01:00', '2024-01-02 03:04:05Z']),
    (r'[\u0000-\u007F]+', ['abc', 'é']),
    (r'[\x{80}-\x{10FFFF}]', ['é', '\U0010FFFF', 'a']),
    (r'[\x{7FF}-\x{800}]', ['\u07ff', '\u0800', '\u0801']),
    (r'[\x{FFFF}-\x{10000}]', ['\uffff', '\U00010000', '\ufffe']),
    (r'[\x{D7FF}-\x{E000}]', ['\ud7ff', '\ue000', '\ue001']),
]

# Patterns llguidance refuses: ours must refuse them too.
ERRORS = [r'a{', r'a{2', r'a{,3}', r'x{2,1}', r'*a', r'(a', r'a)', r'[a', r'[z-a]', r'\0',
          r'(a)\1', r'(?=a)a', r'(?!a)', r'(?<=a)b', r'\b', r'a^b', r'a$b', r'(?z)a', r'\e',
          r'\cA', r'\p{XX}', r'\x{110000}', r'\u{D800}', r'(?m)^a$']


def oracle():
    import llguidance as L
    tok = L.LLTokenizer(open(TOKENIZER).read())

    def accepts(pattern, s):
        m = L.LLMatcher(tok, L.LLMatcher.grammar_from_regex(pattern))
        if m.is_error():
            return None
        for t in tok.tokenize_str(s):
            if not m.consume_token(t):
                return False
        return m.is_accepting()
    return accepts


def c_str(s):
    out = ''
    for b in s.encode('utf-8'):
        if b in (0x22, 0x5C):
            out += '\\' + chr(b)
        elif 0x20 <= b < 0x7F and chr(b) != '?':
            out += chr(b)
        else:
            out += '\\%03o' % b
    return '"' + out + '"'


def rows(accepts):
    out = []
    for pattern, strings in CASES:
        for s in strings:
            r = accepts(pattern, s)
            if r is None:
                raise SystemExit('llguidance refuses %r' % pattern)
            out.append('        {%s, %s, %d},' % (c_str(pattern), c_str(s), int(r)))
    for pattern in ERRORS:
        if accepts(pattern, '') is not None:
            raise SystemExit('llguidance accepts %r, listed as an error' % pattern)
    return out


def main():
    import os as _os
    _os.environ.setdefault('RUST_LOG', 'off')
    accepts = oracle()
    new = rows(accepts)
    if '--check' not in sys.argv:
        print('\n'.join(new))
        return 0
    text = open(C_FILE).read()
    m = re.search(r'BEGIN CASES[^\n]*\n(.*?)\n[^\n]*END CASES', text, re.S)
    have = m.group(1).split('\n') if m else []
    if have != new:
        for a, b in zip(have, new):
            if a != b:
                print('differs:\n  C file: %s\n  oracle: %s' % (a, b))
        print('%d rows in the C file, %d from the oracle' % (len(have), len(new)))
        return 1
    print('%d rows agree with llguidance' % len(new))
    return 0


if __name__ == '__main__':
    sys.exit(main())
