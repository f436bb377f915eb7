"""Adds up the pass/fail counts of every suite's log into one closing line."""
import re
import sys

passed = failed = 0
for path in sys.argv[1:]:
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        print(f"missing log: {path}")
        failed += 1
        continue
    for p, f in re.findall(r"test result: \w+\. (\d+) passed; (\d+) failed", text):  # cargo
        passed += int(p)
        failed += int(f)
    for line in text.splitlines():  # pytest's last line, e.g. "112 passed, 1 xfailed in 9.3s"
        if re.match(r"^=*\s*\d+ (passed|failed)", line.strip()) and " in " in line:
            passed += sum(int(n) for n in re.findall(r"(\d+) passed", line))
            failed += sum(int(n) for n in re.findall(r"(\d+) (?:failed|error)", line))
    m_pass = re.findall(r"^# pass (\d+)$", text, re.M)  # node --test
    m_fail = re.findall(r"^# fail (\d+)$", text, re.M)
    passed += sum(int(n) for n in m_pass)
    failed += sum(int(n) for n in m_fail)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
