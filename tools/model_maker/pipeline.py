"""Split a one-graph package into a decoder-pipeline package: embeddings -> transformer ->
language-model head, three graphs that pass values by name, with the genai_config.json
`decoder.pipeline` block onnxruntime-genai reads for model type "decoder-pipeline"."""

import json
import os

import onnx
import onnx.utils


def _boundaries(graph):
    """(embedding output, final hidden state) value names of a builder-layout decoder."""
    inits = {i.name for i in graph.initializer}
    emb = None
    for n in graph.node:
        if n.op_type in ("Gather", "GatherBlockQuantized") and n.input[0] in inits and \
                n.input[1] == "input_ids":
            emb = n.output[0]
            break
    head = next((n for n in graph.node if "logits" in n.output), None)
    if emb is None or head is None:
        raise ValueError("cannot find the embedding Gather and the lm_head producing 'logits'")
    return emb, head.input[0]


def split_package(src_dir, out_dir):
    """Writes out_dir with embeds.onnx, transformer.onnx, lm_head.onnx and the config."""
    os.makedirs(out_dir, exist_ok=True)
    cfg = json.load(open(os.path.join(src_dir, "genai_config.json"), encoding="utf-8"))
    dec = cfg["model"]["decoder"]
    src = os.path.join(src_dir, dec["filename"])
    model = onnx.load(src)
    g = model.graph
    emb, hidden = _boundaries(g)
    inputs = [i.name for i in g.input]
    outputs = [o.name for o in g.output]
    presents = [o for o in outputs if o != "logits"]
    t_inputs = [emb] + [i for i in inputs if i != "input_ids"]
    stages = [("embeddings", "embeds.onnx", ["input_ids"], [emb]),
              ("transformer", "transformer.onnx", t_inputs, [hidden] + presents),
              ("language_model_head", "lm_head.onnx", [hidden], ["logits"])]
    hidden_size = cfg["model"]["decoder"]["hidden_size"]
    logits = next(o for o in g.output if o.name == "logits")
    dt = logits.type.tensor_type.elem_type
    for name in (emb, hidden):  # shape inference cannot see through contrib ops
        g.value_info.append(onnx.helper.make_tensor_value_info(
            name, dt, ["batch_size", "sequence_length", hidden_size]))
    ex = onnx.utils.Extractor(model)  # no checker: the graphs use com.microsoft ops
    for _, fname, ins, outs in stages:
        sub = ex.extract_model(ins, outs)
        sub.opset_import.extend([o for o in model.opset_import
                                 if o.domain not in {x.domain for x in sub.opset_import}])
        onnx.save(sub, os.path.join(out_dir, fname), save_as_external_data=True,
                  all_tensors_to_one_file=True, location=fname + ".data", size_threshold=1024)
    pipeline = {name: {"filename": fname, "inputs": ins, "outputs": outs}
                for name, fname, ins, outs in stages}
    dec.pop("filename", None)
    dec["pipeline"] = [pipeline]
    cfg["model"]["type"] = "decoder-pipeline"
    with open(os.path.join(out_dir, "genai_config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=4)
        f.write("\n")
    for extra in ("tokenizer.json", "tokenizer_config.json"):
        p = os.path.join(src_dir, extra)
        if os.path.exists(p):
            with open(p, "rb") as a, open(os.path.join(out_dir, extra), "wb") as b:
                b.write(a.read())
    return [s[1] for s in stages]
