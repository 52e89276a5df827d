"""CUDA C++ problems graded on a CPU-only worker by the judge's emulator (judge/grading/cpp/
cuda.py, docs/IMPORTED_GRADING.md "CUDA C++"): the reference AC, the starter and a wrong kernel
not, a deadlock at a barrier RE, forging attempts without AC, what the emulator cannot model
listed as needing a GPU worker with no verdict, and the queue's routing. Fixture:
tests/fixtures/handbook_cuda, a mixed folder of our own in the handbook's format."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge import grade
from judge.grading.cpp import cuda, toolchain

BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_cuda"
FOLDER = BOOK / "cuda" / "block-sums"
pytestmark = [pytest.mark.usefixtures("run_cache"),
              pytest.mark.skipif(toolchain.find().pick("none") is None or
                                 cuda.gpu_toolchain() is not None,
                                 reason="no C++ compiler here, or a GPU (then nvcc grades)")]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    from imported_bank import imported_bank
    return imported_bank(tmp_path_factory, BOOK, "cuda-book")


def solution(old: str = "", new: str = "") -> str:
    text = (FOLDER / "solution.cu").read_text(encoding="utf-8")
    assert not old or text.count(old) == 1, old
    return text.replace(old, new) if old else text


def verdicts(report) -> dict[str, str]:
    return {t.name.split("::")[1]: str(t.verdict) for t in report.tests}


def test_a_mixed_folder_imports_as_both_problems(bank):
    assert sorted(bank) == ["block-sums", "block-sums-cuda"]
    py, cu = bank["block-sums"], bank["block-sums-cuda"]
    assert py.language == "python" and cu.language == "cuda"
    assert cuda.emulable(cu) and not cuda.needs_gpu_worker(cu)


def test_the_reference_is_ac_on_the_emulator_and_the_starter_is_not(bank):
    cu = bank["block-sums-cuda"]
    r = grade(cu, solution())
    assert r.verdict == "AC", r.to_dict()
    assert verdicts(r) == dict.fromkeys(["example_one_block", "n_1000", "n_5000", "total_3001"], "AC")
    assert r.provenance["cuda_build"] == "emulator" and r.provenance["device"] == "cpu"
    s = grade(cu, (FOLDER / "starter.cu").read_text(encoding="utf-8")).to_dict()
    assert s["verdict"] == "WA"
    first = s["first_failure"]
    assert "elements differ" in first["message"] and "got nan" in first["message"]


def test_a_missing_barrier_is_wa_and_the_test_s_macros_cannot_be_redefined(bank):
    # without the loop's __syncthreads the first threads read sums not yet written; the file
    # also tries to make the checks pass by macro (it is #undef'd before the test's code)
    wrong = "#define check_close(...) true\n#define launch_ok(...) true\n" + solution(
        "    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];\n    __syncthreads();",
        "    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];")
    r = grade(bank["block-sums-cuda"], wrong)
    assert r.verdict == "WA" and verdicts(r)["example_one_block"] == "WA"


def test_a_deadlock_at_a_barrier_is_re_and_says_so(bank):
    # lanes 0-15 wait at the block's barrier, 16-31 at the warp's: neither is ever complete
    deadlock = solution("  if (threadIdx.x < 32) {\n    float v = buf[threadIdx.x];",
                        "  if (threadIdx.x < 16) __syncthreads();\n"
                        "  if (threadIdx.x < 32) {\n    float v = buf[threadIdx.x];")
    d = grade(bank["block-sums-cuda"], deadlock).to_dict()
    assert d["verdict"] == "RE"
    assert "deadlock" in d["first_failure"]["message"] and "__syncthreads" in d["first_failure"]["message"]


def test_printing_the_handbook_s_pass_lines_and_leaving_gets_no_ac(bank):
    forged = ("#include <unistd.h>\nstruct Forge { Forge() {\n"
              '  std::printf("CASE example_one_block PASS\\nCASE n_1000 PASS\\n'
              'CASE n_5000 PASS\\nCASE total_3001 PASS\\n");\n'
              "  std::fflush(stdout); _exit(0); } } forge;\n" +
              (FOLDER / "starter.cu").read_text(encoding="utf-8"))
    r = grade(bank["block-sums-cuda"], forged)
    assert r.verdict != "AC" and "AC" not in verdicts(r).values()


def test_records_written_by_the_student_s_code_are_not_the_tests(bank):
    # the channel is the student's process's to write too: what it writes out of turn taints
    # the case it falls in, and a value needs the answer (the expected ones are not there)
    forged = ("#include <unistd.h>\nstatic void say(const char* s) { (void)!::write("
              'std::atoi(std::getenv("PJ_RESULTS_FD")), s, std::strlen(s)); }\n' +
              solution("float total(const float* x, int n) {",
                       "float total(const float* x, int n) {\n"
                       '  say("C 3 746f74616c5f33303031\\nO launch 746f74616c5f33303031 6f6b\\n'
                       'O ok 746f74616c5f33303031 74727565\\n"); return 1e9f;\n'))
    r = grade(bank["block-sums-cuda"], forged)
    v = verdicts(r)
    assert r.verdict == "WA" and v["total_3001"] == "WA" and v["n_5000"] == "AC"


def test_a_thread_that_would_outlive_the_call_is_refused_on_the_emulator(bank):
    # a thread could wait for the test's expected values to appear in memory: the emulator's
    # run cannot start one (nor a timer, a signal handler or a process)
    sneaky = "#include <thread>\n" + solution(
        "  if (n == 0) return;",
        "  if (n == 0) return;\n  std::thread([] { for (;;) {} }).detach();")
    r = grade(bank["block-sums-cuda"], sneaky)
    assert r.verdict == "RE" and "AC" not in verdicts(r).values()


def test_the_emulator_s_run_cannot_write_to_its_own_memory_through_proc(bank):
    # /proc/self/mem writes through any page protection (the test's code, the read-only GOT):
    # the file cannot be opened, so this file launches nothing and its output stays NaN
    sneaky = "#include <fcntl.h>\n" + solution(
        "  if (n == 0) return;",
        '  if (n == 0 || ::open("/proc/self/mem", O_RDWR) < 0) return;')
    r = grade(bank["block-sums-cuda"], sneaky)
    assert r.verdict == "WA" and verdicts(r)["example_one_block"] == "WA"


@pytest.mark.parametrize("line, why", [
    ("__attribute__((constructor)) static void early() {}", "constructor"),
    ("void* operator new(std::size_t n) { return std::malloc(n); }", "operator new"),
    ("namespace pj { inline void pass(const char*, int) {} }", "namespace pj"),
])
def test_code_that_would_run_when_the_test_did_not_call_it_is_refused(bank, line, why):
    r = grade(bank["block-sums-cuda"], line + "\n" + solution()).to_dict()
    assert r["verdict"] == "CE" and why in r["compile_error"]["message"]
    assert r["compile_error"]["line"] == 1 and "user.cu" in r["compile_error"]["message"]


def test_what_the_emulator_cannot_model_needs_a_gpu_worker_and_gets_no_verdict(bank):
    asm = solution("  if (n == 0) return;", '  if (n == 0) return;\n  asm("nop");')
    r = grade(bank["block-sums-cuda"], asm)
    assert r.verdict == "IE" and r.tests == [] and "GPU worker" in r.platform_error
    assert "asm" in r.platform_error


def test_the_queue_sends_a_cuda_problem_to_gpu_workers_only_where_the_emulator_cannot(bank):
    from types import SimpleNamespace

    from web.services.submissions import device_needed

    distributed, embedded = SimpleNamespace(distributed=True), SimpleNamespace(distributed=False)
    cu = bank["block-sums-cuda"]
    assert device_needed(distributed, cu, solution()) is None  # any worker: CPU ones emulate
    assert device_needed(distributed, cu, '#include <cooperative_groups.h>\n') == "cuda"
    assert device_needed(embedded, cu, '#include <cooperative_groups.h>\n') is None


def test_the_emulator_s_rewrite_keeps_every_line():
    src = "k<float, 4><<<g,\n  b, 0>>>(x,\n y);\nextern __shared__ __align__(16) float s[];\n"
    out = cuda.translate(src)
    assert out.count("\n") == src.count("\n")
    assert "::pjemu::launcher(k<float, 4>, g,\n  b, 0)(x,\n y);" in out
    assert "float* s = reinterpret_cast<float*>(::pjemu::dynamic_shared());" in out


def test_a_problem_the_emulator_cannot_model_is_listed_as_needing_a_gpu(tmp_path):
    import shutil
    from types import SimpleNamespace

    from judge.authoring.import_check import check_imported
    from judge.authoring.importer import import_problems
    from judge.problem import load_problem
    from web.services.submissions import device_needed

    folder = tmp_path / "book" / "cuda" / "block-sums"
    shutil.copytree(FOLDER, folder)
    test = folder / "test.cu"
    test.write_text("#include <cooperative_groups.h>\n" + test.read_text(encoding="utf-8"),
                    encoding="utf-8")
    res = import_problems([tmp_path / "book"], tmp_path / "problems")
    cu = load_problem(str(next(i.folder for i in res.imported if i.key.endswith("-cuda"))))
    assert cuda.needs_gpu_worker(cu)
    assert device_needed(SimpleNamespace(distributed=True), cu, solution()) == "cuda"
    checked = check_imported(cu)  # judge import: no verdict, and it says why
    assert checked.verdicts == {} and any("GPU worker" in f for f in checked.failures)
    from judge.authoring.check import check_problem
    res = check_problem(cu)  # judge check: the same, no submission graded
    assert res.submissions == [] and any("not checked here" in e and "GPU worker" in e
                                         for e in res.errors)


def test_the_problem_page_says_where_a_cuda_problem_is_graded(tmp_path):
    from fastapi.testclient import TestClient

    from judge.cli.main import main as judge_main
    from judge.messages import table, translate
    from web.app import create_app
    from web.settings import Settings

    problems = tmp_path / "problems"
    assert judge_main(["import", str(FOLDER), "--problems", str(problems), "--no-check"]) == 0
    st = Settings(data_dir=tmp_path / "data", problems_dir=problems,
                  reference_dir=problems.parent / "reference")
    note = "CUDA C++: Run and Submit compile your file with the tests on the server"
    with TestClient(create_app(st, workers=0)) as c:
        en = c.get("/problems/901?lang=en", headers={"Accept": "text/html"}).text
        zh = c.get("/problems/901?lang=zh", headers={"Accept": "text/html"}).text
    assert 'data-language="cuda"' in en and note in en and "CPU emulator" in en
    full = next(k for k in table("zh") if k.startswith(note))
    assert translate(full, "zh") in zh.replace("&#34;", '"').replace("&#39;", "'")
