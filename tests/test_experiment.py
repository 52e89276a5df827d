"""The chapter's experiment: identical outputs, and computed tokens falling run by run."""

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
    assert result["identical"]
    assert computed["no_cache"] > computed["gpu"] > computed["tiered"], computed
    assert result["summary"]["offloaded"] > 0 and result["summary"]["loaded"] > 0


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
    proc = run_cli("--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(summary) == {"computed", "identical", "offloaded", "loaded"}
    assert summary["identical"] is True

    # A student's file that registers reloaded blocks but never copies their KV back.
    source = open(os.path.join(reference.HERE, "tiered.py")).read()
    broken = source.replace("            _copy_into(kv.k[layer][block], k)\n", "            pass\n") \
                   .replace("            _copy_into(kv.v[layer][block], v)\n", "")
    assert broken != source
    path = tmp_path / "tiered.py"
    path.write_text(broken)
    proc = run_cli("--tiered", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "outputs identical in all three runs: NO" in proc.stdout


def test_cli_reports_a_bad_model_folder(tmp_path):
    proc = run_cli("--model", str(tmp_path))
    assert proc.returncode == 2
    assert "config.json: no such file" in proc.stderr
