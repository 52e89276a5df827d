"""Issue 30 item 15 on the terminal: `judge.py list --lang zh` wrote each problem's difficulty
in English ("easy") in an otherwise Chinese table."""


from cli.test_command_line import practice


def test_practice_list_in_chinese_names_the_difficulty_in_chinese(env):
    out = practice(env, "list", "--lang", "zh")
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "001-lru-cache" in line)
    # Before: "... LRU 缓存 | easy | ..."
    assert "简单" in row or "中等" in row or "困难" in row, row
    assert not any(f" {d} " in f" {row} " for d in ("easy", "medium", "hard")), row


def test_judge_list_in_chinese_names_the_difficulty_in_chinese(env):
    from cli.test_command_line import judge
    out = judge(env, "list", "--lang", "zh")
    row = next(line for line in out.stdout.splitlines() if "lru-cache" in line)
    assert "简单" in row and "easy" not in row, row
