"""Symbolic sizes: arithmetic stays symbolic, what needs a value records a guard."""
import pytest

from kiln._core.symdim import ShapeEnv, SymInt, SymbolicShapeError, building


def test_arithmetic_stays_symbolic_and_evaluates():
    env = ShapeEnv()
    with building(env):
        b = env.symbol("batch", 5)
        e = (b * 784 + 2) // 2 - b % 3
    assert isinstance(e, SymInt) and e.hint == (5 * 784 + 2) // 2 - 5 % 3
    assert e.evaluate({"batch": 9}) == (9 * 784 + 2) // 2 - 9 % 3
    assert env.guards == []
    assert b * 1 is not None and (b * 0) == 0 and isinstance(b + 0, SymInt)


def test_comparisons_record_guards_that_are_checked():
    env = ShapeEnv()
    with building(env):
        b = env.symbol("b", 4)
        assert (b == 1) is False
        assert b >= 0 and not (b < 0)          # sizes are >= 0: no guard for these
        assert (b % 2 == 0) is True
    kinds = sorted(g.kind() for g in env.guards)
    assert kinds == ["condition", "divisible-by"]
    assert env.accepts({"b": 6}) and not env.accepts({"b": 1}) and not env.accepts({"b": 3})


def test_concrete_value_pins_the_symbol_and_says_where():
    env = ShapeEnv()
    with building(env):
        b = env.symbol("b", 3)
        assert list(range(b)) == [0, 1, 2]
    assert env.specialized() == {"b"}
    assert "test_symdim.py" in env.guards[0].where
    assert env.accepts({"b": 3}) and not env.accepts({"b": 4})


def test_a_value_outside_a_build_is_an_error_not_a_guess():
    b = SymInt.symbol("b", 3)
    with pytest.raises(SymbolicShapeError):
        int(b)
    assert repr(b * 2) == "(b * 2)"
    assert hash(b) == hash(SymInt.symbol("b", 7))


def test_dividing_by_a_monomial_that_divides_every_term_is_exact():
    env = ShapeEnv()
    with building(env):
        b, s = env.symbol("b", 5), env.symbol("s", 3)
        flat = b * 16 * 5 * 5                      # a flattened batch of 16x5x5 maps
        assert flat // b == 400 and type(flat // b) is int and flat % b == 0
        per_row = (b * s * 48 + b * 2) // b
        assert isinstance(per_row, SymInt) and per_row.hint == 3 * 48 + 2
        assert per_row.evaluate({"s": 7}) == 7 * 48 + 2
        inexact = (b * 3 + 1) // b                 # a term b does not divide: unchanged
        assert inexact.evaluate({"b": 2}) == 3 and isinstance((b * 6) // (b * 4), SymInt)
        assert inexact != 0
    assert [g.kind() for g in env.guards] == ["condition"]   # only the comparison
