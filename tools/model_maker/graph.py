"""A small ONNX graph writer that streams initializers into one external data file.

Weights are written to <model>.data as they are produced, so a package larger than
memory (or than protobuf's 2 GiB limit) never has to exist as one in-memory proto.
Every initializer is external, as the model builder saves them (size threshold 0);
small shape constants are Constant nodes named /model/constants/<TYPE>/<value>.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper

# Offsets in the data file are aligned so that a reader can map or point into it
# with the element alignment of any type (and of SIMD loads).
DATA_ALIGN = 64

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int8): TensorProto.INT8,
}

OPSET_DEFAULT = 22
OPSET_MS = 1


class GraphWriter:
    def __init__(self, out_dir, filename="model.onnx"):
        self.out_dir = out_dir
        self.filename = filename
        self.data_name = filename + ".data"
        os.makedirs(out_dir, exist_ok=True)
        self._data = open(os.path.join(out_dir, self.data_name), "wb")
        self._offset = 0
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self._names = set()
        self._consts = set()
        self.op_counts = {}

    # -- initializers -------------------------------------------------------------
    def initializer(self, name, array, dtype=None):
        """Append array (cast to dtype when given) to the data file; returns name."""
        if name in self._names:
            raise ValueError(f"initializer {name} defined twice")
        arr = np.ascontiguousarray(array if dtype is None else array.astype(dtype, copy=False))
        onnx_type = NP_TO_ONNX[arr.dtype]
        pad = (-self._offset) % DATA_ALIGN
        if pad:
            self._data.write(b"\0" * pad)
            self._offset += pad
        nbytes = arr.nbytes
        self._data.write(arr.reshape(-1).view(np.uint8).data if nbytes else b"")
        t = TensorProto()
        t.name = name
        t.data_type = onnx_type
        t.dims.extend(arr.shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", self.data_name), ("offset", str(self._offset)), ("length", str(nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self._offset += nbytes
        self.initializers.append(t)
        self._names.add(name)
        return name

    # -- constants ----------------------------------------------------------------
    def const_i64(self, value):
        """Name of an int64 Constant node output holding value (scalar or list)."""
        if isinstance(value, (list, tuple)):
            text = "[" + ", ".join(str(int(v)) for v in value) + "]"
            arr = np.array(value, dtype=np.int64)
        else:
            text = str(int(value))
            arr = np.array(value, dtype=np.int64)
        return self._const(f"/model/constants/INT64/{text}", arr)

    def _const(self, name, arr):
        if name not in self._consts:
            self._consts.add(name)
            tensor = onnx.numpy_helper.from_array(arr, name=name)
            self.nodes.append(helper.make_node(
                "Constant", [], [name], name=name.replace("constants", "constant_nodes"), value=tensor))
            self.op_counts["Constant"] = self.op_counts.get("Constant", 0) + 1
        return name

    def const_i32(self, value):
        """Name of an int32 Constant node output holding the list value."""
        text = "[" + ", ".join(str(int(v)) for v in value) + "]"
        return self._const(f"/model/constants/INT32/{text}", np.array(value, dtype=np.int32))

    def const_f32(self, value, text, dtype=np.float32):
        """Name of a scalar float Constant (float32, or float16 in a float16 graph); `text`
        is how its name spells the value, as the model builder writes it."""
        kind = "FLOAT16" if np.dtype(dtype) == np.float16 else "FLOAT"
        return self._const(f"/model/constants/{kind}/{text}", np.array(value, dtype=dtype))

    # -- nodes --------------------------------------------------------------------
    def node(self, op_type, inputs, outputs, name, domain="", **attrs):
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs), name=name,
                                           domain=domain or None, **attrs))
        key = op_type if not domain else f"{domain}.{op_type}"
        self.op_counts[key] = self.op_counts.get(key, 0) + 1
        return outputs[0] if outputs else None

    def input_with_default(self, name, array, shape):
        """A graph input that also has an initializer (onnxruntime's overridable
        initializer): runs may feed it, and get `array` when they do not. Stored inline:
        the LoRA defaults are empty ([K, 0], [0, N])."""
        if name in self._names:
            raise ValueError(f"initializer {name} defined twice")
        self._names.add(name)
        self.initializers.append(onnx.numpy_helper.from_array(np.ascontiguousarray(array), name=name))
        self.inputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[array.dtype], shape))
        return name

    def input(self, name, elem_type, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    def output(self, name, elem_type, shape):
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, shape))

    # -- save ---------------------------------------------------------------------
    def save(self):
        self._data.close()
        graph = helper.make_graph(self.nodes, "main_graph", self.inputs, self.outputs,
                                  initializer=self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET_DEFAULT),
                           helper.make_opsetid("com.microsoft", OPSET_MS)],
            producer_name="onnx-genai make_model.py",
        )
        model.ir_version = 10
        path = os.path.join(self.out_dir, self.filename)
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        return path, self._offset
