"""The chapter's experiment: identical outputs in all four runs, computed tokens falling from no
cache to GPU only to a host tier, and a small host tier plus a disk tier computing less than GPU
only."""

import json
import os
import subprocess
import sys

import pytest

import reference
from reference.experiments import multi_turn


@pytest.fixture(scope="module")
def result():
    return multi_turn.run_experiment()


def test_outputs_identical_and_computed_tokens_fall(result):
    computed = result["summary"]["computed"]
    assert list(computed) == ["no_cache", "gpu", "tiered", "disk"]
    assert result["identical"]
    assert computed["no_cache"] > computed["gpu"] > computed["tiered"], computed
    assert computed["disk"] < computed["gpu"], computed
    assert result["summary"]["offloaded"] > 0 and result["summary"]["loaded"] > 0


def test_disk_tier_holds_what_the_small_host_tier_cannot(result):
    disk = result["summary"]["disk"]
    # More blocks went to host than it can hold, so some were written to disk and read back.
    assert disk["host_writes"] > multi_turn.SMALL_HOST_BLOCKS, disk
    assert disk["disk_writes"] > 0 and disk["loaded_from_disk"] > 0, disk
    # Every block the GPU let go is kept somewhere below it: the disk run finds what the big host
    # tier finds.
    runs = result["runs"]
    assert runs["disk"]["hits"] == runs["tiered"]["hits"]
    assert runs["disk"]["loaded"] + runs["disk"]["loaded_from_disk"] == runs["tiered"]["loaded"]


def test_table_has_four_aligned_rows(result):
    lines = multi_turn.format_table(result).splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("run "))
    rows = lines[header:header + 5]
    assert [r.split()[0] for r in rows] == ["run", "no_cache", "gpu", "tiered", "disk"]
    assert len({len(r) for r in rows}) == 1, rows
    assert "outputs identical in all four runs: yes" in lines


def test_turn_one_costs_the_same_in_every_run(result):
    # Turn 1 has nothing to reuse yet; the savings come from later turns.
    firsts = {name: r["computed_per_turn"][0] for name, r in result["runs"].items()}
    assert len(set(firsts.values())) == 1, firsts


def test_template_breaks_the_prefix_at_the_assistant_turn(result):
    # turn 2 repeats turn 1's prompt up to the assistant header, then diverges: the history drops
    # the empty think block the reply was generated after.
    reuse = result["runs"]["no_cache"]["reuse"][0]
    from qwen3_tokenizer import load_tokenizer
    tok = load_tokenizer()
    chat = [{"role": "system", "content": multi_turn.SYSTEM},
            {"role": "user", "content": f"Introduce {multi_turn.CITIES[0]} in two sentences."}]
    turn1 = tok.encode_chat(chat, add_generation_prompt=True, enable_thinking=False)
    assert reuse[0] == turn1.index(tok.think_start_id)


def run_cli(*args):
    env = {**os.environ, "PYTHONPATH": reference.REPO_ROOT}
    return subprocess.run([sys.executable, "-m", "reference.experiments.multi_turn", *args],
                          capture_output=True, text=True, env=env, cwd=reference.REPO_ROOT, timeout=300)


def test_cli_json_line_and_student_file(tmp_path):
    # A student's own problem 144 file runs the disk run (here: the reference, copied).
    three_tier = tmp_path / "my_three_tier.py"
    three_tier.write_text(open(os.path.join(reference.HERE, "three_tier.py")).read())
    proc = run_cli("--json", "--three-tier", str(three_tier))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(summary) == {"computed", "identical", "offloaded", "loaded", "disk"}
    assert set(summary["computed"]) == {"no_cache", "gpu", "tiered", "disk"}
    assert summary["identical"] is True
    assert summary["disk"]["loaded_from_disk"] > 0

    # A student's file that registers reloaded blocks but never copies their KV back.
    source = open(os.path.join(reference.HERE, "tiered.py")).read()
    broken = source.replace("            _copy_into(kv.k[layer][block], k)\n", "            pass\n") \
                   .replace("            _copy_into(kv.v[layer][block], v)\n", "")
    assert broken != source
    path = tmp_path / "tiered.py"
    path.write_text(broken)
    proc = run_cli("--tiered", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "outputs identical in all four runs: NO" in proc.stdout


def test_cli_reports_a_bad_model_folder(tmp_path):
    proc = run_cli("--model", str(tmp_path))
    assert proc.returncode == 2
    assert "config.json: no such file" in proc.stderr


def test_three_tier_file_must_define_the_pool(tmp_path):
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    with pytest.raises(SystemExit, match="defines no ThreeTierPrefixCachingBlockPool"):
        multi_turn.load_three_tier_class(str(path))
