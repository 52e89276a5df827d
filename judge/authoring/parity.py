"""Two reports of the same code, one graded on CPU and one on a GPU, held against each other:
the facts (`compare_devices`) and their text (`parity_lines`). `judge parity` (web/ops_cli.py)
gets the two reports; deciding what differs is the core's, like every other grading fact."""

from __future__ import annotations


def parity_diff(cpu: dict, gpu: dict) -> list[dict]:
    """The tests whose discrete result (verdict) differs between two reports, in the CPU
    report's order (then the GPU's own); the overall verdict when no test differs but it does."""
    a = {t["name"]: t["verdict"] for t in cpu.get("tests") or []}
    b = {t["name"]: t["verdict"] for t in gpu.get("tests") or []}
    names = list(a) + [n for n in b if n not in a]
    out = [{"test": n, "cpu": a.get(n), "cuda": b.get(n)} for n in names if a.get(n) != b.get(n)]
    if cpu.get("verdict") != gpu.get("verdict") and not out:
        out.append({"test": "(overall)", "cpu": cpu.get("verdict"), "cuda": gpu.get("verdict")})
    return out


def _side(report: dict) -> dict:
    prov = report.get("provenance") or {}
    return {"verdict": report.get("verdict"), "score": report.get("score"),
            "device": prov.get("device"), "gpu_name": prov.get("gpu_name"),
            "worker": prov.get("worker")}


def compare_devices(cpu: dict, gpu: dict) -> dict:
    """PARITY (the per-test results differ) or SAME, the differences, and each side's verdict,
    score and device; `same_problem` is False when the two graded different problem versions."""
    diff = parity_diff(cpu, gpu)
    version = [(r.get("problem") or {}).get("version") for r in (cpu, gpu)]
    return {"verdict": "PARITY" if diff else "SAME", "differences": diff,
            "cpu": _side(cpu), "cuda": _side(gpu), "same_problem": version[0] == version[1]}


def parity_lines(result: dict) -> list[str]:
    """`compare_devices`' result as the lines `judge parity` prints."""
    lines = []
    for name in ("cpu", "cuda"):
        side = result[name]
        gpu = f" {side['gpu_name']}" if side["gpu_name"] else ""
        lines.append(f"  {name:4}: {side['verdict']} (score {side['score']}) on "
                     f"{side['device']}{gpu}")
    if not result["same_problem"]:
        lines.append("  note: the two sides graded different versions of the problem")
    lines += [f"  differs: {d['test']}: cpu {d['cpu']}, cuda {d['cuda']}"
              for d in result["differences"]]
    lines.append("PARITY: the per-test results differ between CPU and GPU"
                 if result["differences"] else
                 "SAME: every test has the same result on CPU and GPU")
    return lines
