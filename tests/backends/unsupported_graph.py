"""A graph with an op onnx-genai has no kernel for (Col2Im, then Relu) and its input: what
`auto`'s fallback to onnxruntime is tested on (check_backends.py, tests/python)."""
import numpy as np


def col2im_model():
    """(the ModelProto, its input x: float32 [1, 4, 9])"""
    from onnx import TensorProto, helper, numpy_helper
    g = helper.make_graph(
        [helper.make_node("Col2Im", ["x", "image_shape", "block_shape"], ["c"]),
         helper.make_node("Relu", ["c"], ["y"])], "col2im",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([4, 4], np.int64), "image_shape"),
         numpy_helper.from_array(np.array([2, 2], np.int64), "block_shape")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return m, np.random.RandomState(7).randn(1, 4, 9).astype(np.float32)
