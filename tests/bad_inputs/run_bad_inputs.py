#!/usr/bin/env python3
"""Bad inputs, one table row each: the CLI must exit with the row's status, in one
message line holding the row's words, quickly (a FIFO must not block), and without a
sanitizer report. The bad packages, graphs and tensors are made here, under WORK_DIR,
from copies of (and links to) the shared test package; ../shared is never written.

Usage: run_bad_inputs.py CLI WORK_DIR SHARED_DIR [ROW_NAME...]
Exit: 0 all rows passed, 1 a row failed, 77 rows were skipped (shared data missing).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT_S = 60  # a generous bound for sanitizer builds; a blocked open never returns

CLI, WORK, SHARED = (os.path.abspath(a) for a in sys.argv[1:4])
ONLY = set(sys.argv[4:])
VERBOSE = os.environ.get("BAD_INPUTS_VERBOSE") == "1"  # print each row's message
LAST_MESSAGE = [""]
GPT2 = os.path.join(SHARED, "models/ortgenai/hf-internal-testing/tiny-random-gpt2-fp32")
LLAMA2C = os.path.join(SHARED, "models/llama2c")
HAVE_GPT2 = os.path.isfile(os.path.join(GPT2, "genai_config.json"))
HAVE_STORIES = os.path.isfile(os.path.join(LLAMA2C, "stories260K.bin"))


def w(*parts):
    return os.path.join(WORK, *parts)


# ---- makers of bad things ---------------------------------------------------------

def package(name, edit=None, copy=(), remove=(), src=None):
    """A copy of the gpt2 package at WORK/name: genai_config.json copied (and edited by
    edit(cfg)), the other files linked to the shared ones unless listed in copy."""
    src = src or GPT2
    d = w(name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in os.listdir(src):
        if f in remove:
            continue
        if f == "genai_config.json" or f in copy:
            shutil.copyfile(os.path.join(src, f), os.path.join(d, f))
        else:
            os.symlink(os.path.join(src, f), os.path.join(d, f))
    if edit:
        path = os.path.join(d, "genai_config.json")
        with open(path) as f:
            cfg = json.load(f)
        edit(cfg)
        with open(path, "w") as f:
            json.dump(cfg, f)
    return d


def replace(d, name, kind, content=b""):
    """Replaces file `name` in package d by a FIFO, a folder, a link or new bytes."""
    p = os.path.join(d, name)
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    elif os.path.lexists(p):  # a file, a link (never its target) or a FIFO
        os.unlink(p)
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "dir":
        os.makedirs(p)
    elif kind == "link":
        os.symlink(content, p)
    else:
        with open(p, "wb") as f:
            f.write(content)
    return d


def with_file(path, name, kind, content=b""):
    """Puts `name` (a FIFO, link, ...) beside path (a file or folder); returns path."""
    d = path if os.path.isdir(path) else os.path.dirname(path)
    os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
    replace(d, name, kind, content)
    return path


def decoder(cfg):
    return cfg["model"]["decoder"]


def setter(*path_and_value):
    """edit() that sets cfg[a][b]... = value (value last)."""
    *path, value = path_and_value

    def edit(cfg):
        node = cfg
        for k in path[:-1]:
            node = node.setdefault(k, {})
        node[path[-1]] = value
    return edit


def save_graph(name, nodes, inputs, outputs, inits=(), opsets=(("", 17),), check=False):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid(d, v) for d, v in opsets])
    m.ir_version = 8
    if check:
        onnx.checker.check_model(m)
    p = w("graphs", name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    onnx.save(m, p)
    return p


def vi(name, dtype=T.FLOAT, shape=(3,)):
    return h.make_tensor_value_info(name, dtype, list(shape))


def tensor_file(name, array, tname="x"):
    p = w("tensors", name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    onnx.save_tensor(numpy_helper.from_array(array, tname), p)
    return p


def external_graph(name, location, offset=None, length=None):
    """y = x + w with w stored as external data at `location`."""
    d = w("ext", name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "w.bin"), "wb") as f:
        f.write(np.arange(3, dtype=np.float32).tobytes())
    t = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[3])
    t.data_location = T.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, str(v)
    g = h.make_graph([h.make_node("Add", ["x", "w"], ["y"])], "g", [vi("x")], [vi("y")], [t])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    p = os.path.join(d, "model.onnx")
    with open(p, "wb") as f:
        f.write(m.SerializeToString())
    return p


def stories():
    """stories260K as a package (tools/make_model.py), made once."""
    d = w("stories260K")
    if not os.path.isfile(os.path.join(d, "genai_config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools/make_model.py"), "--from-llama2c",
                        os.path.join(LLAMA2C, "stories260K.bin"), "--tokenizer",
                        os.path.join(LLAMA2C, "tok512.bin"), "--dtype", "fp32", "--out", d],
                       check=True, stdout=subprocess.DEVNULL)
    return d


def hf_cache_layout():
    """The Hugging Face cache: snapshots/<rev>/<file> links to ../../blobs/<hash>."""
    root = w("hf_cache")
    shutil.rmtree(root, ignore_errors=True)
    snap = os.path.join(root, "snapshots", "0123abc")
    os.makedirs(snap)
    os.makedirs(os.path.join(root, "blobs"))
    for i, f in enumerate(sorted(os.listdir(GPT2))):
        blob = os.path.join(root, "blobs", "%040x" % (i + 1))
        shutil.copyfile(os.path.join(GPT2, f), blob)
        os.symlink(os.path.join("..", "..", "blobs", os.path.basename(blob)), os.path.join(snap, f))
    return snap


# ---- the table ----------------------------------------------------------------------
# Each row: (name, needs, exit status, words the message must contain, make), where
# make() prepares the input and returns the CLI arguments. needs: "gpt2", "stories" or
# "" (self-contained).

IDS = ["--ids", "0,0,195,731", "--max-length", "10"]


def gen(d, *extra):
    return ["generate", d] + (list(extra) if extra else IDS)


def cfg_row(name, words, edit, exit_status=1):
    return (name, "gpt2", exit_status, words, lambda: gen(package(name, edit)))


def raw_cfg_row(name, words, text):
    def make():
        d = package(name)
        replace(d, "genai_config.json", "bytes", text)
        return gen(d)
    return (name, "gpt2", 1, words, make)


def graph_row(name, words, builder, command="show", extra=()):
    return (name, "", 1, words, lambda: [command, builder()] + list(extra))


def gather_axis_string():
    n = h.make_node("Gather", ["x", "i"], ["y"], name="gather")
    n.attribute.append(h.make_attribute("axis", "one"))
    return save_graph("gather_axis_string.onnx", [n], [vi("x"), vi("i", T.INT64, (1,))],
                      [vi("y", shape=(1,))])


def transpose_perm_floats():
    n = h.make_node("Transpose", ["x"], ["y"], name="tr")
    n.attribute.append(h.make_attribute("perm", [1.0, 0.0]))
    return save_graph("transpose_perm_floats.onnx", [n], [vi("x", shape=(2, 3))],
                      [vi("y", shape=(3, 2))])


def leaky_relu(name, *attrs):
    """LeakyRelu 'lr' over x [3] with the given AttributeProtos, as written."""
    n = h.make_node("LeakyRelu", ["x"], ["y"], name="lr")
    n.attribute.extend(attrs)
    return save_graph(name + ".onnx", [n], [vi("x")], [vi("y")])


def typeless(name, value):
    a = h.make_attribute(name, value)
    a.type = onnx.AttributeProto.UNDEFINED  # the value's field is still there
    return a


def two_fields(name, value):
    a = h.make_attribute(name, value)
    a.ints.append(3)  # a second value field beside the type's own
    return a


def attr_row(name, words, *attrs):
    """What onnxruntime refuses when the model loads (tools/gen_attr_schemas.py)."""
    return (name, "", 1, words,
            lambda: infer_args(leaky_relu(name, *attrs),
                               ("x", tensor_file("x3.pb", np.arange(3, dtype=np.float32)))))


def gqa_total_length_graph():
    """GroupQueryAttention decoding one token over a past of 3 rows while
    total_sequence_length says 6 (the mask's width): onnxruntime refuses it."""
    feeds = {"q": np.zeros((1, 1, 16), np.float32), "k": np.zeros((1, 1, 16), np.float32),
             "v": np.zeros((1, 1, 16), np.float32), "pk": np.zeros((1, 2, 3, 8), np.float32),
             "pv": np.zeros((1, 2, 3, 8), np.float32), "seqlens_k": np.array([3], np.int32),
             "total_sequence_length": np.array(6, np.int32)}
    node = h.make_node("GroupQueryAttention", list(feeds), ["y"], name="attn",
                       domain="com.microsoft", num_heads=2, kv_num_heads=2)
    vis = [vi(i, T.INT32 if a.dtype == np.int32 else T.FLOAT, ["%s_%d" % (i, d) for d in range(a.ndim)])
           for i, a in feeds.items()]
    g = save_graph("gqa_total_length.onnx", [node], vis, [vi("y", shape=["b", "s", "h"])],
                   opsets=(("", 17), ("com.microsoft", 1)))
    return infer_args(g, *[(i, tensor_file("gqa_tl_%s.pb" % i, a, i)) for i, a in feeds.items()])


def huge_tensor():
    shape = h.make_node("Constant", [], ["s"], value=h.make_tensor("v", T.INT64, [2], [1 << 20, 1 << 20]))
    cos = h.make_node("ConstantOfShape", ["s"], ["big"], name="huge",
                      value=h.make_tensor("z", T.FLOAT, [1], [1.0]))
    red = h.make_node("ReduceSum", ["big"], ["y"], keepdims=0)
    return save_graph("huge_tensor.onnx", [shape, cos, red], [], [vi("y", shape=())])


def infer_args(graph, *inputs):
    args = ["infer", graph]
    for name, path in inputs:
        args += ["--input", "%s=%s" % (name, path)]
    return args + ["--output-dir", w("infer_out")]


def past_kv_graph(name, op, inputs, attrs, past, value_past, opset):
    """One attention node over inputs fed from .pb files, all float32 but seqlens_k and
    total_sequence_length; past_key is `past` and past_value `value_past` in shape
    (the graph declares only their ranks, so the kernel's own check is reached)."""
    shapes = {"q": (1, 1, 8), "k": (1, 1, 8), "v": (1, 1, 8), "pk": past, "pv": value_past,
              "q4": (1, 2, 1, 4), "k4": (1, 2, 1, 4), "v4": (1, 2, 1, 4)}
    feeds, vis = [], []
    for i in inputs:
        if not i:
            continue
        if i == "seqlens_k":
            arr = np.array([past[2]], np.int32)
        elif i == "total_sequence_length":
            arr = np.array(past[2] + 1, np.int32)
        else:
            arr = np.zeros(shapes[i], np.float32)
        f = tensor_file("%s_%s.pb" % (name, i), arr, i)
        feeds.append((i, f))
        dt = T.INT32 if arr.dtype == np.int32 else T.FLOAT
        vis.append(vi(i, dt, ["%s_%d" % (i, d) for d in range(arr.ndim)]))
    domain = "" if op == "Attention" else "com.microsoft"
    node = h.make_node(op, list(inputs), ["y"], name="attn", domain=domain, **attrs)
    opsets = (("", opset),) if not domain else (("", 17), ("com.microsoft", 1))
    g = save_graph(name + ".onnx", [node], vis, [vi("y", shape=["b", "s", "h"])], opsets=opsets)
    return infer_args(g, *feeds)


def add_graph():
    return save_graph("add.onnx", [h.make_node("Add", ["x", "x"], ["y"])], [vi("x")], [vi("y")],
                      check=True)


def tokenizer_row(name, words, content, extra=None):
    def make():
        d = package(name)
        replace(d, "tokenizer.json", "bytes", content() if callable(content) else content)
        return gen(d, *(extra or ["-p", "Hello", "--max-length", "10"]))
    return (name, "gpt2", 1, words, make)


def tokenizer_json(edit):
    with open(os.path.join(GPT2, "tokenizer.json")) as f:
        tok = json.load(f)
    edit(tok)
    return json.dumps(tok).encode()


def set_added_id(v):
    def edit(tok):
        tok["added_tokens"][0]["id"] = v
    return edit


def set_vocab_id(v):
    def edit(tok):
        k = next(iter(tok["model"]["vocab"]))
        tok["model"]["vocab"][k] = v
    return edit


PATH_WORDS = "a package may only name files inside its own folder"

ROWS = [
    # -- genai_config.json: syntax, types and values --
    raw_cfg_row("cfg_malformed", ["genai_config.json", "malformed JSON at line 1"], b'{"model": {'),
    raw_cfg_row("cfg_empty", ["genai_config.json", "malformed JSON"], b""),
    raw_cfg_row("cfg_array", ["genai_config.json", "the top level is not a JSON object"], b"[1, 2]"),
    raw_cfg_row("cfg_binary", ["genai_config.json", "malformed JSON at line 2, column 23 (byte 33)"],
                bytes(range(256))),
    raw_cfg_row("cfg_no_model", ['"model" is missing'], b'{"search": {}}'),
    cfg_row("cfg_no_type", ["model.type is missing"], lambda c: c["model"].pop("type")),
    cfg_row("cfg_no_context", ["model.context_length is missing"],
            lambda c: c["model"].pop("context_length")),
    cfg_row("cfg_context_string", ['model.context_length is "512", expected an integer >= 1'],
            setter("model", "context_length", "512")),
    cfg_row("cfg_vocab_negative", ["model.vocab_size is -5, expected an integer >= 0"],
            setter("model", "vocab_size", -5)),
    cfg_row("cfg_vocab_mismatch", ["model.vocab_size is 999", "has 1000 entries per token"],
            setter("model", "vocab_size", 999)),
    cfg_row("cfg_layers_int_max", ["model.decoder.num_hidden_layers is 2147483647",
                                   "carries a KV cache for 5 layers"],
            setter("model", "decoder", "num_hidden_layers", 2147483647)),
    cfg_row("cfg_layers_one_more", ["model.decoder.num_hidden_layers is 6",
                                    "carries a KV cache for 5 layers"],
            setter("model", "decoder", "num_hidden_layers", 6)),
    cfg_row("cfg_layers_too_large", ["num_hidden_layers is 1e+10, too large: at most 2147483647"],
            setter("model", "decoder", "num_hidden_layers", 1e10)),
    cfg_row("cfg_layers_fraction", ["num_hidden_layers is 2.5, expected an integer"],
            setter("model", "decoder", "num_hidden_layers", 2.5)),
    cfg_row("cfg_max_length_1e12", ["search.max_length is 1e+12, too large: at most 2147483647"],
            setter("search", "max_length", 1e12)),
    cfg_row("cfg_top_p", ["search.top_p is 1.5, expected a number in [0, 1]"],
            setter("search", "top_p", 1.5)),
    cfg_row("cfg_temperature", ["search.temperature is -1, expected a number >= 0"],
            setter("search", "temperature", -1)),
    cfg_row("cfg_penalty_huge", ["search.repetition_penalty is 1e+39, too large"],
            setter("search", "repetition_penalty", 1e39)),
    cfg_row("cfg_seed_huge", ["search.random_seed is 1e+30, too large"],
            setter("search", "random_seed", 1e30)),
    cfg_row("cfg_beams_zero", ["search.num_beams is 0, expected an integer >= 1"],
            setter("search", "num_beams", 0)),
    cfg_row("cfg_return_gt_beams", ["search.num_return_sequences is 3, expected at most search.num_beams (2)"],
            lambda c: c.update(search={"num_beams": 2, "num_return_sequences": 3})),
    cfg_row("cfg_eos_string", ['model.eos_token_id is "x", expected a token id'],
            setter("model", "eos_token_id", "x")),
    cfg_row("cfg_no_filename", ["model.decoder.filename is missing"],
            lambda c: decoder(c).pop("filename")),
    cfg_row("cfg_filename_number", ["model.decoder.filename is 42, expected a string"],
            setter("model", "decoder", "filename", 42)),
    cfg_row("cfg_bad_template", ["model.decoder.inputs.past_names is \"past_%s\"",
                                 "'%' must be followed by 'd'"],
            setter("model", "decoder", "inputs", "past_names", "past_%s")),
    cfg_row("cfg_logits_name", ["model.decoder.outputs.logits is 'nope'", "has no such output"],
            setter("model", "decoder", "outputs", "logits", "nope")),
    cfg_row("cfg_input_ids_name", ["past.onnx: graph input 'input_ids' cannot be fed"],
            setter("model", "decoder", "inputs", "input_ids", "nope")),
    cfg_row("cfg_type_unsupported", ["model.type 't5' is not supported"],
            setter("model", "type", "t5")),
    cfg_row("cfg_opt_level", ['graph_optimization_level is "fast"'],
            setter("model", "decoder", "session_options", "graph_optimization_level", "fast")),
    ("cfg_fifo", "gpt2", 1, ["genai_config.json: not a regular file (a FIFO)"],
     lambda: gen(replace(package("cfg_fifo"), "genai_config.json", "fifo"))),
    ("cfg_folder", "gpt2", 1, ["genai_config.json: not a regular file (a folder)"],
     lambda: gen(replace(package("cfg_folder"), "genai_config.json", "dir"))),
    ("cfg_missing", "gpt2", 1, ["genai_config.json: cannot open"],
     lambda: gen(package("cfg_missing", remove=("genai_config.json",)))),

    # -- paths a package names --
    cfg_row("path_decoder_up", ["model.decoder.filename is '../../other/past.onnx'", "goes up with '..'",
                                PATH_WORDS],
            setter("model", "decoder", "filename", "../../other/past.onnx")),
    cfg_row("path_decoder_passwd", ["model.decoder.filename is '../../../../etc/passwd'", PATH_WORDS],
            setter("model", "decoder", "filename", "../../../../etc/passwd")),
    cfg_row("path_decoder_absolute", ["model.decoder.filename is '/etc/passwd'", "the path is absolute"],
            setter("model", "decoder", "filename", "/etc/passwd")),
    cfg_row("path_decoder_inner_up", ["model.decoder.filename is 'sub/../../past.onnx'", "goes up"],
            setter("model", "decoder", "filename", "sub/../../past.onnx")),
    cfg_row("path_decoder_empty", ["model.decoder.filename is ''", "the path is empty"],
            setter("model", "decoder", "filename", "")),
    cfg_row("path_embedding", ["model.embedding.filename is '../embed.onnx'"],
            setter("model", "embedding", {"filename": "../embed.onnx"})),
    cfg_row("path_vision_config", ["model.vision.config_filename is '/etc/hosts'"],
            setter("model", "vision", {"filename": "v.onnx", "config_filename": "/etc/hosts"})),
    cfg_row("path_speech_adapter", ["model.speech.adapter_filename is '../a.bin'"],
            setter("model", "speech", {"filename": "s.onnx", "adapter_filename": "../a.bin"})),
    cfg_row("path_pipeline_stage", ["model.decoder.pipeline[0].lm_head.filename is '../lm.onnx'"],
            setter("model", "decoder", "pipeline", [{"lm_head": {"filename": "../lm.onnx"}}])),
    cfg_row("path_draft_raw", ["model.draft.decoder.filename is '../../draft.onnx'"],
            setter("model", "draft", {"decoder": {"filename": "../../draft.onnx"}})),
    cfg_row("path_tokenizer_dir", ["model.tokenizer_dir is '..'"], setter("model", "tokenizer_dir", "..")),
    ("path_decoder_dev_zero", "gpt2", 1, ["past.onnx: not a regular file (a character device)"],
     lambda: gen(replace(package("path_decoder_dev_zero"), "past.onnx", "link", "/dev/zero"))),
    ("path_decoder_fifo", "gpt2", 1, ["model.decoder.filename", "past.onnx: not a regular file (a FIFO)"],
     lambda: gen(replace(package("path_decoder_fifo"), "past.onnx", "fifo"))),
    ("path_decoder_folder", "gpt2", 1, ["past.onnx: not a regular file (a folder)"],
     lambda: gen(replace(package("path_decoder_folder"), "past.onnx", "dir"))),
    ("path_decoder_missing", "gpt2", 1, ["model.decoder.filename names 'past.onnx', which is not "
                                         "in the package"],
     lambda: gen(package("path_decoder_missing", remove=("past.onnx",)))),
    ("path_decoder_dangling", "gpt2", 1, ["model.decoder.filename names 'past.onnx', which is not "
                                          "in the package"],
     lambda: gen(replace(package("path_decoder_dangling"), "past.onnx", "link", "nowhere.onnx"))),
    graph_row("ext_up", ["initializer 'w': external data location is '../w.bin'", "goes up"],
              lambda: external_graph("up", "../w.bin")),
    graph_row("ext_absolute", ["external data location is '/etc/passwd'", "the path is absolute"],
              lambda: external_graph("abs", "/etc/passwd")),
    graph_row("ext_missing", ["external data 'nothere.bin'", "cannot open"],
              lambda: external_graph("missing", "nothere.bin")),
    graph_row("ext_past_end", ["external data 'w.bin' is 12 bytes, offset 64 is past its end"],
              lambda: external_graph("past_end", "w.bin", offset=64)),
    graph_row("ext_fifo", ["external data 'fifo.bin'", "not a regular file (a FIFO)"],
              lambda: with_file(external_graph("fifo", "fifo.bin"), "fifo.bin", "fifo")),

    # -- .onnx files --
    ("onnx_truncated", "gpt2", 1, ["truncated.onnx"],
     lambda: ["show", with_file(w("graphs", "truncated.onnx"), "truncated.onnx", "bytes",
                                open(os.path.join(GPT2, "past.onnx"), "rb").read(1000))]),
    graph_row("onnx_json", ["not_onnx.onnx"],
              lambda: with_file(w("graphs", "not_onnx.onnx"), "not_onnx.onnx", "bytes", b'{"model": 1}')),
    graph_row("onnx_empty", ["empty.onnx"],
              lambda: with_file(w("graphs", "empty.onnx"), "empty.onnx", "bytes", b"")),
    graph_row("onnx_fifo", ["fifo.onnx: not a regular file (a FIFO)"],
              lambda: with_file(w("graphs", "fifo.onnx"), "fifo.onnx", "fifo")),
    graph_row("onnx_missing", ["nothing.onnx: cannot open"], lambda: w("graphs", "nothing.onnx")),
    graph_row("onnx_unknown_op", ["node 'f' (FrobnicateX): op FrobnicateX is not implemented"],
              lambda: save_graph("unknown_op.onnx", [h.make_node("FrobnicateX", ["x"], ["y"], name="f")],
                                 [vi("x")], [vi("y")]),
              command="infer"),
    graph_row("onnx_domain_not_imported", ["domain 'com.example' is not imported"],
              lambda: save_graph("domain.onnx", [h.make_node("Relu", ["x"], ["y"], domain="com.example")],
                                 [vi("x")], [vi("y")]),
              command="infer"),
    graph_row("onnx_cycle", ["cycle"],
              lambda: save_graph("cycle.onnx", [h.make_node("Relu", ["b"], ["a"], name="r1"),
                                                h.make_node("Relu", ["a"], ["b"], name="r2"),
                                                h.make_node("Relu", ["x"], ["y"])],
                                 [vi("x")], [vi("y")]),
              command="infer"),
    ("attr_axis_string", "", 1, ["node 'gather' (Gather): attribute 'axis' is a string, expected an int"],
     lambda: infer_args(gather_axis_string(), ("x", tensor_file("x3.pb", np.arange(3, dtype=np.float32))),
                        ("i", tensor_file("i1.pb", np.array([1], np.int64), "i")))),
    ("attr_perm_floats", "", 1, ["node 'tr' (Transpose): attribute 'perm' is floats, expected ints"],
     lambda: infer_args(transpose_perm_floats(),
                        ("x", tensor_file("x23.pb", np.zeros((2, 3), np.float32))))),
    attr_row("attr_alpha_int", ["attr_alpha_int.onnx: node 'lr' (LeakyRelu): attribute 'alpha' "
                                "is an int, expected a float"], h.make_attribute("alpha", 2)),
    attr_row("attr_unknown", ["node 'lr' (LeakyRelu): unknown attribute 'beta' (LeakyRelu at opset 17 "
                              "has attributes alpha)"], h.make_attribute("beta", 0.5)),
    attr_row("attr_repeated", ["node 'lr' (LeakyRelu): attribute 'alpha' is given more than once"],
             h.make_attribute("alpha", 0.5), h.make_attribute("alpha", 0.25)),
    attr_row("attr_typeless", ["node 'lr' (LeakyRelu): attribute 'alpha' has no type"],
             typeless("alpha", 0.5)),
    attr_row("attr_two_fields", ["node 'lr' (LeakyRelu): attribute 'alpha' is declared a float "
                                 "but holds ints too"], two_fields("alpha", 0.5)),
    ("attr_required_missing", "", 1, ["node 'c' (Cast): required attribute 'to' (an int) is missing"],
     lambda: infer_args(save_graph("cast_no_to.onnx", [h.make_node("Cast", ["x"], ["y"], name="c")],
                                   [vi("x")], [vi("y")]),
                        ("x", tensor_file("x3.pb", np.arange(3, dtype=np.float32))))),
    ("oom_4tib_tensor", "", 1, ["node 'huge' (ConstantOfShape): out of memory for output 0 ('big', "
                                "float32 [1048576,1048576], 4398046511104 bytes)"],
     lambda: infer_args(huge_tensor())),

    # -- attention key/value caches of the wrong shape (one check, cpu_want_past_kv) --
    ("past_kv_onnx_attention", "", 1, ["node 'attn' (Attention)", "input 5 (past_value 'pv') has "
                                       "shape [1,2,2,4], expected [1,2,3,4]", "past length of past_key 'pk'"],
     lambda: past_kv_graph("past_kv_onnx", "Attention", ["q4", "k4", "v4", "", "pk", "pv"], {},
                           (1, 2, 3, 4), (1, 2, 2, 4), 23)),
    ("past_kv_mha_rank", "", 1, ["node 'attn' (MultiHeadAttention)", "input 6 (past_key 'pk') has "
                                 "shape [1,2,4], expected [1,2,past_length,4]"],
     lambda: past_kv_graph("past_kv_mha", "MultiHeadAttention", ["q", "k", "v", "", "", "", "pk", "pv"],
                           {"num_heads": 2}, (1, 2, 4), (1, 2, 4, 4), 17)),
    ("past_kv_key_alone", "", 1, ["node 'attn' (Attention)", "past_key (input 4) and past_value (input 5) "
                                  "must be given together; only past_key 'pk' is"],
     lambda: past_kv_graph("past_kv_alone", "Attention", ["q4", "k4", "v4", "", "pk"], {},
                           (1, 2, 3, 4), None, 23)),
    ("past_kv_gqa_head_size", "", 1, ["node 'attn' (GroupQueryAttention)", "input 4 (past_value 'pv') "
                                      "has shape [1,2,4,3], expected [1,2,4,4]"],
     lambda: past_kv_graph("past_kv_gqa", "GroupQueryAttention",
                           ["q", "k", "v", "pk", "pv", "seqlens_k", "total_sequence_length"],
                           {"num_heads": 2, "kv_num_heads": 2}, (1, 2, 4, 4), (1, 2, 4, 3), 17)),

    ("past_kv_gqa_total_length", "", 1, ["node 'attn' (GroupQueryAttention)", "total_sequence_length 6 "
                                         "disagrees with the past: past_key has 3 rows and 1 are new, "
                                         "so it must be 4 (a growing cache) or at most 3"],
     gqa_total_length_graph),

    # -- tokenizer.json --
    tokenizer_row("tok_malformed", ["tokenizer.json: malformed JSON"], b'{"model": {'),
    tokenizer_row("tok_malformed_with_ids", ["tokenizer.json: malformed JSON"], b'{"model": {', IDS),
    ("tok_fifo", "gpt2", 1, ["tokenizer.json: not a regular file (a FIFO)"],
     lambda: gen(replace(package("tok_fifo"), "tokenizer.json", "fifo"), "-p", "Hi")),
    ("tok_missing", "gpt2", 1, ["tokenizer.json: cannot open"],
     lambda: gen(package("tok_missing", remove=("tokenizer.json",)), "-p", "Hi")),
    tokenizer_row("tok_added_id_huge", ["added_tokens[0] needs an integer id in [0, 16777215]"],
                  lambda: tokenizer_json(set_added_id(2147483647))),
    tokenizer_row("tok_vocab_id_negative", ["must be an integer id in [0, 16777215]"],
                  lambda: tokenizer_json(set_vocab_id(-1))),
    tokenizer_row("tok_model_unsupported", ["model.type 'Frob' is not supported"],
                  lambda: tokenizer_json(lambda t: t["model"].update(type="Frob"))),
    tokenizer_row("tok_not_object", ["tokenizer.json"], b"[]"),

    # -- generate options --
    ("opt_beams_1024", "stories", 1, ["num_beams 1024 x max_length 512 x vocab 512",
                                      "the search would take an estimated", "lower num_beams"],
     lambda: ["generate", stories(), "-p", "Once upon a time", "--num-beams", "1024",
              "--max-length", "512"]),
    ("opt_min_above_max", "gpt2", 1, ["min_length 20 is greater than max_length 10"],
     lambda: gen(GPT2, "--ids", "1", "--min-length", "20", "--max-length", "10")),
    ("opt_return_without_beams", "gpt2", 1, ["num_return_sequences 5 must be in [1, num_beams 1]",
                                             "needs beam search"],
     lambda: gen(GPT2, *IDS, "--num-return-sequences", "5")),
    ("opt_temperature_nan", "gpt2", 1, ["temperature is nan, expected a finite number >= 0"],
     lambda: gen(GPT2, *IDS, "--temperature", "nan", "--do-sample")),
    ("opt_temperature_negative", "gpt2", 1, ["temperature is -1, expected a finite number >= 0"],
     lambda: gen(GPT2, *IDS, "--temperature", "-1", "--do-sample")),
    ("opt_top_p_2", "gpt2", 1, ["top_p is 2, expected a number in [0, 1]"],
     lambda: gen(GPT2, *IDS, "--top-p", "2")),
    ("opt_top_k_negative", "gpt2", 1, ["--top-k: -5 is too small: at least 0"],
     lambda: gen(GPT2, *IDS, "--top-k", "-5")),
    ("opt_max_length_1e12", "gpt2", 1, ["--max-length: 1e12 is too large: at most 1073741824"],
     lambda: gen(GPT2, "--ids", "1", "--max-length", "1e12")),
    ("opt_max_length_context", "gpt2", 1, ["max_length 600 exceeds the model's context_length 512"],
     lambda: gen(GPT2, "--ids", "1", "--max-length", "600")),
    ("opt_max_length_text", "gpt2", 1, ["--max-length: 'ten' is not a number"],
     lambda: gen(GPT2, "--ids", "1", "--max-length", "ten")),
    ("opt_beams_zero", "gpt2", 1, ["--num-beams: 0 is too small: at least 1"],
     lambda: gen(GPT2, *IDS, "--num-beams", "0")),
    ("opt_temperature_overflow", "gpt2", 1, ["--temperature: 1e99 is out of range"],
     lambda: gen(GPT2, *IDS, "--temperature", "1e99")),
    ("opt_ids_garbage", "gpt2", 1, ["--ids: '1,x' is not a comma-separated list of token ids"], lambda: gen(GPT2, "--ids", "1,x")),
    ("opt_ids_vocab", "gpt2", 1, ["token 5000 at position 0 is outside the vocabulary [0, 1000)"],
     lambda: gen(GPT2, "--ids", "5000")),
    ("opt_prompt_too_long", "gpt2", 1, ["exceed max_length 3"],
     lambda: gen(GPT2, "--ids", "1,2,3,4", "--max-length", "3")),
    ("opt_prompt_and_ids", "gpt2", 1, ["give either -p or --ids, not both"],
     lambda: gen(GPT2, "-p", "hi", "--ids", "1")),
    ("opt_unknown_flag", "gpt2", 1, ["unknown argument '--frobnicate'"],
     lambda: gen(GPT2, "--frobnicate")),
    ("opt_missing_value", "gpt2", 1, ["--max-length needs a value"],
     lambda: gen(GPT2, "--ids", "1", "--max-length")),
    ("opt_onnx_as_package", "gpt2", 1, ["past.onnx: this is an ONNX graph, not a model package"],
     lambda: ["generate", "-m", os.path.join(GPT2, "past.onnx"), "--ids", "1"]),
    ("opt_no_model", "", 1, ["no model folder given"], lambda: ["generate", "--ids", "1"]),
    ("opt_nowhere", "", 1, ["no such model folder"], lambda: ["generate", w("nowhere"), "--ids", "1"]),
    ("opt_unknown_command", "", 2, ["unknown command 'frobnicate'"], lambda: ["frobnicate"]),

    # -- infer --
    ("infer_no_equals", "", 1, ["--input expects NAME=PATH.pb, got 'x'"],
     lambda: ["infer", add_graph(), "--input", "x"]),
    ("infer_input_twice", "", 1, ["--input x= is given twice"],
     lambda: infer_args(add_graph(), ("x", "a.pb"), ("x", "b.pb"))),
    ("infer_threads", "", 1, ["--threads: 'many' is not a number"],
     lambda: ["infer", add_graph(), "--threads", "many"]),
    ("infer_tensor_missing", "", 1, ["nothere.pb: cannot open"],
     lambda: infer_args(add_graph(), ("x", w("tensors", "nothere.pb")))),
    ("infer_tensor_fifo", "", 1, ["fifo.pb: not a regular file (a FIFO)"],
     lambda: infer_args(add_graph(), ("x", with_file(w("tensors", "fifo.pb"), "fifo.pb", "fifo")))),
    ("infer_tensor_garbage", "", 1, ["garbage.pb"],
     lambda: infer_args(add_graph(), ("x", with_file(w("tensors", "garbage.pb"), "garbage.pb", "bytes",
                                                     b"\xff" * 40)))),
    ("infer_tensor_dtype", "", 1, ["input 'x' has dtype int64, expected float32"],
     lambda: infer_args(add_graph(), ("x", tensor_file("x_i64.pb", np.arange(3, dtype=np.int64))))),
    ("infer_tensor_shape", "", 1, ["input 'x' has shape [4], expected dim 0 to be 3"],
     lambda: infer_args(add_graph(), ("x", tensor_file("x4.pb", np.zeros(4, np.float32))))),
    ("infer_unknown_input", "", 1, ["the graph has no input named 'z'"],
     lambda: infer_args(add_graph(), ("x", tensor_file("x3.pb", np.arange(3, dtype=np.float32))),
                        ("z", tensor_file("x3.pb", np.arange(3, dtype=np.float32))))),
    ("infer_missing_input", "", 1, ["input 'x' was not given"], lambda: infer_args(add_graph())),

    # -- what must keep working (exit 0): links, the Hugging Face cache layout --
    ("ok_hf_cache_links", "gpt2", 0, ["0,0,195,731,731,114,114,114,114,114"],
     lambda: gen(hf_cache_layout())),
    ("ok_linked_package", "gpt2", 0, ["0,0,195,731,731,114,114,114,114,114"],
     lambda: gen(package("ok_linked_package"))),
    ("ok_sub_folder", "gpt2", 0, ["0,0,195,731,731,114,114,114,114,114"],
     lambda: gen(with_file(package("ok_sub_folder", setter("model", "decoder", "filename",
                                                           "sub/./past.onnx")),
                           "sub/past.onnx", "link", os.path.join(GPT2, "past.onnx")))),
]


# ---- the runner -----------------------------------------------------------------------

def sanitizer_env():
    env = dict(os.environ)
    # huge allocations must fail as NULL (our error), not abort inside ASan
    opts = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "allocator_may_return_null=1"
    return env


def run_row(row, env):
    name, needs, want_rc, words, make = row
    try:
        args = make()
    except Exception as e:  # a broken row is a failure, not a crash of the table
        return "could not prepare the input: %r" % e
    try:
        p = subprocess.run([CLI] + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return "did not finish within %d s: %s" % (TIMEOUT_S, " ".join(args))
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    for bad in ("runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                "UndefinedBehaviorSanitizer"):
        if bad in err:
            return "sanitizer report:\n" + err
    # ASan's note that an allocation failed (returned as NULL, as asked) is not ours
    err = "\n".join(ln for ln in err.splitlines() if not ln.startswith("==") or "WARNING" not in ln)
    if p.returncode != want_rc:
        return "exit %d, expected %d; stderr: %s" % (p.returncode, want_rc, err.strip())
    text = out if want_rc == 0 else err
    LAST_MESSAGE[0] = text.strip().splitlines()[0] if text.strip() else ""
    lines = [ln for ln in text.splitlines() if ln and "warning:" not in ln]
    if want_rc == 1:  # status 2 (usage) may print the usage after the line
        if len(lines) != 1 or not lines[0].startswith("onnx-genai: "):
            return "the error is not one 'onnx-genai: ' line: %r" % text
    missing = [wd for wd in words if wd not in text]
    if missing:
        return "message lacks %r: %s" % (missing, text.strip())
    return None


def main():
    os.makedirs(WORK, exist_ok=True)
    for sub in ("graphs", "tensors"):
        os.makedirs(w(sub), exist_ok=True)
    env = sanitizer_env()
    names = [r[0] for r in ROWS]
    assert len(names) == len(set(names)), "duplicate row names"
    passed = failed = skipped = 0
    for row in ROWS:
        name, needs = row[0], row[1]
        if ONLY and name not in ONLY:
            continue
        if (needs == "gpt2" and not HAVE_GPT2) or (needs == "stories" and not HAVE_STORIES):
            print("SKIP %s: the shared test models are not beside the project (%s)" % (name, SHARED))
            skipped += 1
            continue
        why = run_row(row, env)
        if why:
            failed += 1
            print("FAIL %s: %s" % (name, why))
        else:
            passed += 1
            print("ok   %s" % name)
            if VERBOSE:
                print("     " + LAST_MESSAGE[0])
    print("%d passed, %d failed, %d skipped (%d rows)" % (passed, failed, skipped, len(ROWS)))
    if failed:
        return 1
    return 77 if skipped else 0


if __name__ == "__main__":
    sys.exit(main())
