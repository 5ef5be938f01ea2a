"""The processor features ONNX Runtime's int8 kernels depend on (issue 36).

On x86-64, ORT's CPU kernels for a uint8 activation times an int8 weight (MatMulInteger, ConvInteger,
DynamicQuantizeLSTM, QLinearConv / QLinearMatMul / QGemm, and the QDQ files ORT fuses into them)
use MLAS's u8s8 GEMM.  Without VNNI (SSE4.1, AVX2, AVX-512 without VNNI) that GEMM multiplies with
VPMADDUBSW, which adds each pair of u8 x s8 products into a 16-bit integer with saturation: a pair
sum beyond 32767 is clamped, and the int32 product is no longer exact.  With AVX-512 VNNI, AVX-VNNI
or AMX (VPDPBUSD: 32-bit sums) and on ARM the product is exact.  ONNX Runtime's quantization guide
says so ("Data type selection", "When to use reduce-range"): the same int8 file can be within its
budget on one server and over it on another.

Read from ``/proc/cpuinfo`` on Linux; elsewhere the flags are unknown and said so (never guessed).
Plain reads, no cache (no module-global state): the file is small.
"""
from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Optional

CPUINFO = "/proc/cpuinfo"
X86 = ("x86_64", "amd64", "i386", "i686", "x86")
ARM = ("aarch64", "arm64", "armv8l", "armv7l")
# the flags int8 results depend on, in the order they are printed (the /proc/cpuinfo spelling)
RELEVANT = ("sse4_1", "avx2", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "amx_int8", "asimddp")
NAMES = {"sse4_1": "SSE4.1", "avx2": "AVX2", "avx512f": "AVX-512F", "avx512bw": "AVX-512BW",
         "avx512_vnni": "AVX-512 VNNI", "avx_vnni": "AVX-VNNI", "amx_int8": "AMX-INT8", "asimddp": "ARM dot product"}
VNNI = ("avx512_vnni", "avx_vnni", "amx_int8")     # 32-bit u8 x s8 dot products: no 16-bit pair sums


@dataclass(frozen=True)
class CpuFeatures:
    """What this processor offers ORT's int8 kernels; ``flags`` None: not known on this OS."""

    arch: str
    flags: Optional[frozenset[str]] = None
    source: str = ""                     # where the flags were read ("/proc/cpuinfo"; "" when unknown)
    model: str = ""                      # the "model name" line, for the report
    relevant: tuple[str, ...] = field(default=())

    @property
    def x86(self) -> bool:
        return self.arch.lower() in X86

    @property
    def vnni(self) -> Optional[bool]:
        """A 32-bit u8 x s8 dot product (VNNI / AMX) is available; None: unknown."""
        if self.flags is None:
            return None
        return any(f in self.flags for f in VNNI)

    @property
    def saturates(self) -> Optional[bool]:
        """ORT's u8s8 products may saturate (x86 without VNNI); None: unknown (flags or arch not read)."""
        if self.arch.lower() in ARM:
            return False
        if not self.x86 or self.flags is None:
            return None
        return not self.vnni

    def names(self) -> list[str]:
        """The relevant features present, in the report's spelling."""
        return [NAMES[f] for f in RELEVANT if self.flags is not None and f in self.flags]

    def summary(self) -> str:
        """One line: e.g. "x86_64: AVX2, no AVX-512, no VNNI"."""
        if self.flags is None:
            return f"{self.arch or 'unknown'}: CPU features unknown (not read on this OS)"
        if not self.x86:
            return f"{self.arch}: " + (", ".join(self.names()) or "no x86 int8 features")
        have = self.names()
        parts = [n for n in have if n not in ("AVX-512 VNNI", "AVX-VNNI", "AMX-INT8")]
        if "avx512f" not in self.flags:
            parts.append("no AVX-512")
        parts += [n for n in have if n in ("AVX-512 VNNI", "AVX-VNNI", "AMX-INT8")] or ["no VNNI"]
        return f"{self.arch}: " + ", ".join(parts)

    def int8_line(self) -> str:
        """What int8 results depend on, for a report of a file with int8 ops."""
        s = self.saturates
        if s is None:
            return f"int8 kernels: {self.summary()}: whether u8s8 products saturate is not known here"
        if s:
            return (f"int8 kernels: {self.kernel()}, no VNNI: u8s8 products may saturate "
                    "(16-bit pair sums, VPMADDUBSW): results can differ on a VNNI CPU")
        return f"int8 kernels: {self.kernel()}: u8s8 products are exact (no 16-bit saturation)"

    def kernel(self) -> str:
        """The instruction set ORT's u8s8 GEMM runs on here (MLAS's dispatch order)."""
        f = self.flags or frozenset()
        if not self.x86:
            return self.arch + (" (dot product)" if "asimddp" in f else "")
        for flag in ("amx_int8", "avx512_vnni", "avx_vnni"):
            if flag in f:
                return NAMES[flag]
        for flag in ("avx512bw", "avx2", "sse4_1"):
            if flag in f:
                return NAMES[flag]
        return "x86 without SSE4.1"

    def key(self) -> str:
        """What a baseline must share with this run for int8 results to compare: the kernel."""
        if self.flags is None:
            return "unknown"
        return self.kernel() + (" (saturating u8s8)" if self.saturates else "")


def parse_cpuinfo(text: str, arch: str) -> CpuFeatures:
    """Features from the text of /proc/cpuinfo (the first processor's flags / Features line)."""
    flags: Optional[frozenset[str]] = None
    model = ""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key in ("flags", "features") and flags is None:
            flags = frozenset(value.split())
        elif key == "model name" and not model:
            model = value.strip()
    if flags is None:
        return CpuFeatures(arch, None, "", model)
    return CpuFeatures(arch, flags, CPUINFO, model, tuple(f for f in RELEVANT if f in flags))


def detect() -> CpuFeatures:
    """This machine's features (Linux: /proc/cpuinfo; other systems: unknown, said so)."""
    arch = platform.machine() or "unknown"
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as f:
            text = f.read(1 << 20)
    except OSError:
        return CpuFeatures(arch)
    return parse_cpuinfo(text, arch)


if __name__ == "__main__":       # .ci/run prints the features the suite ran on (stdlib only: before the venv)
    cpu = detect()
    print(f"CPU: {cpu.model or 'unknown model'}; {cpu.summary()}")
    print(cpu.int8_line())
