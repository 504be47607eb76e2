"""The line protocol every PyTorch peer of `lenspec bench --peer` speaks.

lenspec writes one command per line on stdin and reads one JSON object per
line from stdout: `load MODEL DATA`, `time OP REPS [WARMUP]`, `tokens`,
`loss`, `quit`, and any a peer adds. A peer module supplies the model-specific
part (a class with load, tokens, and its operations); this module supplies the rest.
"""

import json
import struct
import sys
import time

import numpy as np
import torch


def read_safetensors(path):
    """The tensors of a safetensors file as torch tensors (little-endian on disk, native in memory)."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    dtypes = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4"}
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        s, e = v["data_offsets"]
        arr = np.frombuffer(data[s:e], dtype=dtypes[v["dtype"]]).reshape(v["shape"])
        out[name] = torch.from_numpy(arr.astype(arr.dtype.newbyteorder("=")))  # a native copy
    return out


def timed(f, reps, warmup=1):
    """Seconds of reps calls of f, after warmup untimed calls (lenspec
    asks for one before a round of several runs, none before a round of one
    run: it warms each side up once itself, timing that run to choose how
    many runs a round makes)."""
    for _ in range(warmup):
        f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return ts


def blas_core():
    """The OpenBLAS kernels this process runs (PyTorch's BLAS on Debian)."""
    try:
        import ctypes
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return "openblas (%s)" % lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"


def cpu_capability():
    """The instruction set of PyTorch's own CPU kernels (ATen; ATEN_CPU_CAPABILITY caps it)."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def onednn_isa():
    """The instruction set of oneDNN's kernels, which PyTorch convolves with (DNNL_MAX_CPU_ISA caps it)."""
    try:
        import ctypes
        lib = ctypes.CDLL("libdnnl.so.2")
        lib.dnnl_get_effective_cpu_isa.restype = ctypes.c_int
        lib.dnnl_cpu_isa2str.restype = ctypes.c_char_p
        lib.dnnl_cpu_isa2str.argtypes = [ctypes.c_int]
        name = lib.dnnl_cpu_isa2str(lib.dnnl_get_effective_cpu_isa()).decode()
        return name[len("cpu_isa_"):] if name.startswith("cpu_isa_") else name
    except (OSError, AttributeError):
        return "unknown"


def serve(peer, ops, commands=None):
    """Answer lenspec's commands on stdin; ops maps an operation's name to the
    callable it times, commands a further command's name to a callable of its
    arguments (strings) returning its answer. What peer.load returns, if
    anything, is added to load's answer."""
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        try:
            if cmd[0] == "load":
                ans = dict(peer.load(cmd[1], cmd[2]) or {})
                ans.update({"ok": True, "torch": torch.__version__, "threads": torch.get_num_threads(),
                       "interop_threads": torch.get_num_interop_threads(), "blas": blas_core(),
                       "capability": cpu_capability(), "onednn": onednn_isa()})
            elif cmd[0] == "time":
                if cmd[1] not in ops:
                    raise ValueError("unknown op %r (want %s)" % (cmd[1], " or ".join(sorted(ops))))
                warmup = int(cmd[3]) if len(cmd) > 3 else 1
                ans = {"seconds": timed(ops[cmd[1]], int(cmd[2]), warmup)}
            elif cmd[0] == "tokens":
                ans = {"tokens": peer.tokens()}
            elif cmd[0] == "loss" and hasattr(peer, "loss"):
                ans = {"loss": peer.loss()}
            elif cmd[0] == "quit":
                return
            elif commands and cmd[0] in commands:
                ans = commands[cmd[0]](*cmd[1:])
            else:
                ans = {"error": "unknown command %r" % cmd[0]}
        except Exception as e:  # reported to lenspec, which fails with it
            ans = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()
