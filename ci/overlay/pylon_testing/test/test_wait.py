"""``throttled``: an expensive wait condition looked at a few times a second, not per callback."""

from pylon_testing.wait import throttled


def test_a_throttled_condition_is_evaluated_once_per_period_and_false_between():
    calls = []

    def condition() -> bool:
        calls.append(1)
        return True
    look = throttled(condition, period=3600.0)
    assert look() is True and len(calls) == 1
    assert [look() for _ in range(5)] == [False] * 5 and len(calls) == 1


def test_without_a_period_every_look_evaluates():
    values = iter([False, False, True])
    look = throttled(lambda: next(values), period=0.0)
    assert [look(), look(), look()] == [False, False, True]
