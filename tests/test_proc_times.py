"""proc.run stamps each output line with when it was read: what a benchmark process costs before
its first sample and per sample after it is read off these times."""

from hourly.adapters import proc


def test_each_line_is_stamped_with_when_it_was_read():
    r = proc.run(["sh", "-c", "echo a; sleep 0.4; echo b; echo c"])
    assert r.output.splitlines() == ["a", "b", "c"]
    assert len(r.line_times) == 3
    a, b, c = r.line_times
    assert 0 <= a < b <= c <= r.duration
    assert b - a >= 0.35  # the sleep lies between the first line and the second
