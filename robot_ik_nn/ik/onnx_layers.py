"""The network's layers as ONNX, written from the safetensors weights (no torch needed) and run
with onnxruntime, in float64 like every backend (network_forward.py says why). The graph is the
layers alone (features in, the quaternion head out); the steps around them are
network_forward.features and network_forward.angles, the same for every backend.

``model.onnx`` records the SHA-256 of the weights it was written from; loading refuses a file
that belongs to other weights.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .network_forward import NetArrays

OPSET = 17


def onnx_bytes(network: NetArrays, weights_sha256: str) -> bytes:
    """The layers (Gemm, then SiLU as x * sigmoid(x) between them) as a serialised ONNX model."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, last = [], [], "features"
    for i, (w, b) in enumerate(network.layers):
        inits += [
            numpy_helper.from_array(np.asarray(w, np.float64), f"W{i}"),
            numpy_helper.from_array(np.asarray(b, np.float64), f"b{i}"),
        ]
        out = "head" if i == len(network.layers) - 1 else f"z{i}"
        nodes.append(helper.make_node("Gemm", [last, f"W{i}", f"b{i}"], [out], transB=1))
        if out != "head":
            nodes += [
                helper.make_node("Sigmoid", [out], [f"s{i}"]),
                helper.make_node("Mul", [out, f"s{i}"], [f"h{i}"]),
            ]
            out = f"h{i}"
        last = out
    sizes = network.sizes
    graph = helper.make_graph(
        nodes,
        "robot_ik_nn_layers",
        [helper.make_tensor_value_info("features", TensorProto.DOUBLE, ["batch", int(sizes[0])])],
        [helper.make_tensor_value_info("head", TensorProto.DOUBLE, ["batch", int(sizes[-1])])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="robot_ik_nn"
    )
    model.ir_version = 8  # readable by onnxruntime releases of the last few years
    helper.set_model_props(model, {"weights_sha256": weights_sha256})
    onnx.checker.check_model(model)
    return model.SerializeToString()


def recorded_weights(path: str | Path) -> str | None:
    """The weights' SHA-256 recorded in an ONNX file's metadata, or None. Read by onnxruntime:
    the serving install (``.[serve]``) has no ``onnx`` package."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.get_modelmeta().custom_metadata_map.get("weights_sha256")


class OnnxLayers:
    """onnxruntime running ``model.onnx``; one thread for one target, all cores for batches."""

    def __init__(self, path: str | Path, network: NetArrays):
        import onnxruntime as ort

        def session(threads: int):
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        self._one, self._many = session(1), session(0)
        inputs = self._one.get_inputs()
        if len(inputs) != 1 or inputs[0].shape[1] != int(network.sizes[0]):
            raise ValueError(f"{path} does not take {int(network.sizes[0])} features")

    def run(self, x: np.ndarray) -> np.ndarray:
        session = self._one if len(x) == 1 else self._many
        return session.run(["head"], {"features": np.ascontiguousarray(x, np.float64)})[0]
