"""Bad input from Python raises an exception with a clear message and never crashes the
interpreter: wrong dtypes and shapes, closed objects, missing folders and files, bad ids,
bad names. Each case checks the exception type and the words its message must hold."""
import os

import numpy as np
import pytest

from conftest import BUILD


def og_dir(model):
    return model._dir


def gen_for(og, model, **search):
    params = og.GeneratorParams(model)
    params.set_search_options(**{"max_length": 10, **search})
    return og.Generator(model, params)


def test_missing_folder_and_files(og, tmp_path):
    missing = str(tmp_path / "no-such-package")
    for make in (og.Model, og.Config, og.Tokenizer):
        with pytest.raises(og.NotFoundError, match="no-such-package"):
            make(missing)
    with pytest.raises(og.NotFoundError, match="genai_config.json"):
        og.Model(str(tmp_path))  # a folder without a package in it
    (tmp_path / "genai_config.json").write_text("{ not json")
    with pytest.raises(og.InvalidModelError, match="malformed JSON"):
        og.Model(str(tmp_path))
    with pytest.raises(og.OgError, match="no-such.onnx"):
        og.InferenceSession(str(tmp_path / "no-such.onnx"))
    with pytest.raises(og.OgError):
        og.InferenceSession(b"definitely not an onnx model")
    with pytest.raises(TypeError, match="path"):
        og.Model(42)


def test_append_tokens_dtypes_and_shapes(og, gpt2):
    gen = gen_for(og, gpt2)
    with pytest.raises(TypeError, match="integers.*float64"):
        gen.append_tokens(np.array([1.5, 2.0]))
    with pytest.raises(TypeError, match="integers.*bool"):
        gen.append_tokens(np.array([True, False]))
    with pytest.raises(TypeError):
        gen.append_tokens(["a", "b"])
    with pytest.raises(og.InvalidArgumentError, match="int32"):
        gen.append_tokens(np.array([2**40], dtype=np.int64))
    with pytest.raises(og.InvalidArgumentError, match="outside the vocabulary"):
        gen.append_tokens([100000])
    with pytest.raises(og.InvalidArgumentError, match="outside the vocabulary"):
        gen.append_tokens([-1])
    with pytest.raises(og.InvalidArgumentError, match="2 rows of tokens for batch_size 1"):
        gen.append_tokens(np.zeros((2, 3), dtype=np.int32))
    with pytest.raises(og.InvalidArgumentError, match="1-D or 2-D"):
        gen.append_tokens(np.zeros((1, 1, 3), dtype=np.int32))
    with pytest.raises(og.InvalidArgumentError, match="no tokens"):
        gen.append_tokens([])
    with pytest.raises(og.InvalidArgumentError, match="exceed max_length"):
        gen.append_tokens(list(range(11)))
    gen.append_tokens(np.array([0, 0, 195, 731], dtype=np.int64))  # any integer dtype that fits
    gen.append_tokens(np.array([[731]], dtype=np.uint16)[:, ::-1])  # and any layout
    assert gen.get_sequence(0).tolist() == [0, 0, 195, 731, 731]


def test_generator_misuse(og, gpt2):
    gen = gen_for(og, gpt2)
    with pytest.raises(og.InvalidArgumentError, match="append prompt tokens"):
        gen.generate_next_token()
    with pytest.raises(og.InvalidArgumentError, match="no next tokens"):
        gen.get_next_tokens()
    gen.append_tokens([0, 0, 195, 731])
    with pytest.raises(og.InvalidArgumentError, match="sequence 5 of 1"):
        gen.get_sequence(5)
    with pytest.raises(og.InvalidArgumentError, match="negative"):
        gen.get_sequence(-1)
    with pytest.raises(TypeError):
        gen.get_sequence("0")
    with pytest.raises(og.InvalidArgumentError, match="cannot rewind to 100"):
        gen.rewind_to(100)
    with pytest.raises(og.NotFoundError, match="'nope'"):
        gen.get_output("nope")
    while not gen.is_done():
        gen.generate_next_token()
    with pytest.raises(og.InvalidArgumentError, match="generation is done"):
        gen.generate_next_token()
    with pytest.raises(og.InvalidArgumentError, match="batch_size"):
        gen_for(og, gpt2, batch_size=0)
    params = og.GeneratorParams(gpt2)
    params.set_search_options(max_length=100000)
    with pytest.raises(og.InvalidArgumentError, match="context_length"):
        og.Generator(gpt2, params)
    with pytest.raises(TypeError):
        og.Generator(gpt2, None)
    params.set_search_options(max_length=10)
    with pytest.raises(og.InvalidArgumentError, match="json_schema, json_object, regex, "
                                                      "lark_grammar"):
        params.set_guidance("grammar", "{}")
    with pytest.raises(og.UnsupportedError, match="enable_ff_tokens"):
        params.set_guidance("regex", "a+", enable_ff_tokens=True)
    with pytest.raises(TypeError, match="two str"):
        params.set_guidance("regex", None)
    params.set_guidance("regex", "[0-9")
    with pytest.raises(og.InvalidArgumentError, match="column 1"):
        og.Generator(gpt2, params)  # the regex is compiled here, before any token
    params.set_guidance("json_schema", "{\"type\": \"integer\"")
    with pytest.raises(og.InvalidArgumentError, match="json_schema"):
        og.Generator(gpt2, params)


def test_closed_objects(og, gpt2_dir):
    model = og.Model(gpt2_dir)
    tok = og.Tokenizer(model)
    stream = tok.create_stream()
    gen = gen_for(og, model)
    gen.append_tokens([0, 0, 195, 731])
    model.close()  # the generator keeps what it needs: it still runs
    gen.generate_next_token()
    with pytest.raises(og.InvalidArgumentError, match="Model is closed"):
        model.type
    with pytest.raises(og.InvalidArgumentError, match="Model is closed"):
        og.GeneratorParams(model)
    gen.close()
    for call in (gen.generate_next_token, gen.is_done, gen.get_next_tokens,
                 lambda: gen.get_sequence(0), lambda: gen.append_tokens([1]),
                 lambda: gen.rewind_to(0), gen.get_logits, lambda: gen.get_output("logits")):
        with pytest.raises(og.InvalidArgumentError, match="Generator is closed"):
            call()
    tok.close()
    with pytest.raises(og.InvalidArgumentError, match="Tokenizer is closed"):
        tok.encode("x")
    assert stream.decode(31373) == "hello"  # the stream keeps its tokenizer alive
    stream.close()
    with pytest.raises(og.InvalidArgumentError, match="TokenizerStream is closed"):
        stream.decode(1)
    with og.Model(gpt2_dir) as m2:
        assert m2.type == "gpt2"
    with pytest.raises(og.InvalidArgumentError, match="closed"):
        m2.vocab_size


def test_tokenizer_bad_input(og, gpt2):
    tok = og.Tokenizer(gpt2)
    with pytest.raises(TypeError, match="str"):
        tok.encode(5)
    with pytest.raises(TypeError, match="str"):
        tok.encode(b"bytes")
    with pytest.raises(TypeError, match="integers"):
        tok.decode(np.array([1.0]))
    with pytest.raises(og.InvalidArgumentError, match="1-D"):
        tok.decode(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(og.InvalidArgumentError, match="2-D"):
        tok.decode_batch(np.zeros(3, dtype=np.int32))
    with pytest.raises(TypeError):
        tok.encode_batch("not a list")
    # ids outside the vocabulary decode to nothing, as Hugging Face tokenizers decodes them
    from tokenizers import Tokenizer as HF
    hf = HF.from_file(os.path.join(og_dir(gpt2), "tokenizer.json"))
    for bad in (-1, 10**6, 2**31 - 1):
        assert tok.decode([5, bad, 5]) == hf.decode([5, 5])
        assert tok.create_stream().decode(bad) == ""
    stream = tok.create_stream()
    with pytest.raises(og.InvalidArgumentError, match="int32"):
        stream.decode(2**40)
    with pytest.raises(TypeError):
        stream.decode(1.5)


def test_session_bad_input(og, tmp_path):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 3])])
    path = str(tmp_path / "add.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    s = og.InferenceSession(path)
    assert [(i.name, i.shape, i.type) for i in s.get_inputs()] == \
        [("x", ["batch", 3], "tensor(float)"), ("y", [1, 3], "tensor(float)")]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((1, 3), dtype=np.float32)
    (z,) = s.run(None, {"x": x, "y": y})
    np.testing.assert_array_equal(z, x + y)
    np.testing.assert_array_equal(s.run(["z"], {"x": np.asfortranarray(x), "y": y})[0], x + y)
    with pytest.raises(og.InvalidArgumentError, match="'x'.*float64.*float32"):
        s.run(None, {"x": x.astype(np.float64), "y": y})
    with pytest.raises(og.InvalidArgumentError, match="'y'"):
        s.run(None, {"x": x, "y": np.ones((2, 3), dtype=np.float32)})
    with pytest.raises(og.InvalidArgumentError, match="'x'"):
        s.run(None, {"x": np.ones(3, dtype=np.float32), "y": y})
    with pytest.raises(og.InvalidArgumentError, match="'y' was not given"):
        s.run(None, {"x": x})
    with pytest.raises(og.NotFoundError, match="'w'"):
        s.run(["w"], {"x": x, "y": y})
    with pytest.raises(og.OgError, match="'q'"):
        s.run(None, {"x": x, "y": y, "q": y})
    with pytest.raises(TypeError, match="dict"):
        s.run(None, [x, y])
    with pytest.raises(TypeError, match="dtype"):
        s.run(None, {"x": np.zeros((2, 3), dtype=[("a", "<f4")]), "y": y})
    with pytest.raises(og.OgError):
        s.run(None, {"x": np.array([["a", "b", "c"]]), "y": y})
    with pytest.raises(og.UnsupportedError, match="CUDAExecutionProvider"):
        og.InferenceSession(path, providers=["CUDAExecutionProvider"])
    s.close()
    with pytest.raises(og.InvalidArgumentError, match="closed"):
        s.run(None, {"x": x, "y": y})


def test_session_strings_and_dtypes(og, tmp_path):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["t"]), helper.make_node("Not", ["b"], ["nb"]),
         helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT)], "g",
        [helper.make_tensor_value_info("s", TensorProto.STRING, [None]),
         helper.make_tensor_value_info("b", TensorProto.BOOL, [2]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT16, [2])],
        [helper.make_tensor_value_info("t", TensorProto.STRING, [None]),
         helper.make_tensor_value_info("nb", TensorProto.BOOL, [2]),
         helper.make_tensor_value_info("hf", TensorProto.FLOAT, [2])])
    path = str(tmp_path / "mixed.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    s = og.InferenceSession(path)
    strings = np.array(["héllo", "", "wörld\x00x"], dtype=object)
    t, nb, hf = s.run(None, {"s": strings, "b": np.array([True, False]),
                             "h": np.array([1.5, -2.0], dtype=np.float16)})
    assert t.dtype == object and t.tolist() == strings.tolist()
    assert nb.dtype == np.bool_ and nb.tolist() == [False, True]
    assert hf.dtype == np.float32 and hf.tolist() == [1.5, -2.0]
    assert s.run(["t"], {"s": np.array(["a", "b"]), "b": np.array([True, True]),
                         "h": np.zeros(2, dtype=np.float16)})[0].tolist() == ["a", "b"]
    with pytest.raises(og.InvalidArgumentError, match="str or bytes"):
        s.run(None, {"s": np.array([1, "a"], dtype=object), "b": np.array([True, False]),
                     "h": np.zeros(2, dtype=np.float16)})


def test_threads_share_a_model(og, gpt2):
    """Generators of one model on several threads: calls are serialized per model (the C
    sessions are not re-entrant); every thread gets the single-thread answer."""
    import threading
    want = [0, 0, 195, 731, 731, 114, 114, 114, 114, 114]
    out, errors = [], []

    def work():
        try:
            for _ in range(5):
                gen = gen_for(og, gpt2)
                gen.append_tokens([0, 0, 195, 731])
                while not gen.is_done():
                    gen.generate_next_token()
                out.append(gen.get_sequence(0).tolist())
        except Exception as e:  # reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and out == [want] * 20
