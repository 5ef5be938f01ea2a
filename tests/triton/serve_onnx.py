"""A real Triton server (PyTriton's bundled tritonserver: HTTP + gRPC front ends, the dynamic batcher)
serving an ONNX file's ONNX Runtime session, on 127.0.0.1 only.  Run by tests/triton/server.py with the
server venv's Python (the OS's own Python 3.11: docs/triton.md "A real server in the tests"); never
imported by drifttui.

    python serve_onnx.py --onnx FILE --name NAME --http-port P --grpc-port Q [--max-batch-size N]
                         [--delay-us U] [--answer ok|shape|dtype|missing] [--seconds S]
"""
import argparse
import signal
import sys
import threading

import numpy as np
import onnxruntime as ort
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig

_NP = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
       "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--onnx", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--http-port", type=int, required=True)
    p.add_argument("--grpc-port", type=int, required=True)
    p.add_argument("--metrics-port", type=int, required=True)
    p.add_argument("--max-batch-size", type=int, default=8)
    p.add_argument("--delay-us", type=int, default=20000)
    p.add_argument("--answer", default="ok", choices=["ok", "shape", "dtype"])
    p.add_argument("--seconds", type=float, default=600.0)     # the server ends itself after this
    p.add_argument("--workspace", default=None)
    a = p.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])
    ins, outs = sess.get_inputs(), sess.get_outputs()
    names = [o.name for o in outs]

    @batch
    def infer(**feeds):
        got = sess.run(names, {i.name: feeds[i.name] for i in ins})
        if a.answer == "shape":
            got = [g.reshape(g.shape[0], -1)[:, :-1] for g in got]
        elif a.answer == "dtype":
            got = [g.astype(np.int32) for g in got]
        return dict(zip(names, got))

    def spec(v, out=False):
        dtype = np.int32 if out and a.answer == "dtype" else _NP[v.type]     # the server declares what it casts to
        return Tensor(name=v.name, dtype=dtype, shape=tuple(d if isinstance(d, int) else -1 for d in v.shape[1:]))

    config = TritonConfig(http_address="127.0.0.1", http_port=a.http_port, grpc_address="127.0.0.1",
                          grpc_port=a.grpc_port, metrics_address="127.0.0.1", metrics_port=a.metrics_port,
                          allow_metrics=False, exit_timeout_secs=2)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with Triton(config=config, workspace=a.workspace) as triton:
        triton.bind(model_name=a.name, infer_func=infer, inputs=[spec(i) for i in ins],
                    outputs=[spec(o, True) for o in outs],
                    config=ModelConfig(max_batch_size=a.max_batch_size,
                                       batcher=DynamicBatcher(max_queue_delay_microseconds=a.delay_us)))
        triton.run()
        print("serving", flush=True)
        stop.wait(a.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
