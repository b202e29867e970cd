from inkling.completion.decoding.stop_rules import (StopRule, repeats_line_above, stop_rule_for,
                                                    trim_repeated_suffix)


def test_line_mode_ends_at_line_break():
    rule = stop_rule_for("    return ", "def f():\n    return ", "", "\n\ndef g():\n")
    assert not rule.block
    assert rule.cut("self.items") is None
    assert rule.cut("self.items[sku]\n    except") == len("self.items[sku]")
    assert rule.cut("x", final=True) == 1


def test_block_mode_when_cursor_opens_an_empty_block():
    prefix = "class A:\n    def f(self):\n        "
    rule = stop_rule_for("        ", prefix, "", "\n\n    def g(self):\n        pass\n")
    assert rule.block and rule.indent == 5
    text = "x = 1\n        return x\n\n    def h(self):\n"
    assert text[:rule.cut(text)] == "x = 1\n        return x"
    assert rule.cut("x = 1\n        ret") is None


def test_block_mode_after_colon_at_end_of_line():
    rule = stop_rule_for("def f(a):", "def f(a):", "", "\n")
    assert rule.block
    text = "\n    return a\n\nprint(f(1))\n"
    assert text[:rule.cut(text)] == "\n    return a"
    assert rule.cut("\n    return a\n", final=True) == len("\n    return a")


def test_not_a_block_when_the_block_has_a_body():
    rule = stop_rule_for("    ", "def f():\n    ", "", "\n    return 1\n")
    assert not rule.block


def test_not_a_block_after_an_ordinary_line():
    assert not stop_rule_for("    ", "x = 1\n    ", "", "\n").block
    assert not StopRule(False, "").block


def test_trim_overlap_with_rest_of_line():
    assert trim_repeated_suffix("foo(x))", ")", ")\n") == "foo(x)"
    assert trim_repeated_suffix("a, b]", "]", "]\n") == "a, b"
    assert trim_repeated_suffix("return x", "xs)", "xs)\n") == "return x"  # a partial name stays
    assert trim_repeated_suffix("return x", "x", "x\n") == "return "  # the whole rest repeats


def test_trim_suggestion_that_repeats_following_lines():
    suffix = "\n    return total\n"
    assert trim_repeated_suffix("return total", "", suffix) == ""
    assert trim_repeated_suffix("total += 1", "", suffix) == "total += 1"


def test_a_degenerate_loop_ends_the_suggestion_where_it_began():
    from inkling.completion.decoding.stop_rules import loop_start
    line = StopRule(False, "x = ")
    assert line.cut("get_n_children_alive.0.0.0.0.0.0") == len("get_n_children_alive")
    assert line.cut("get_name.0.0") is None                       # not yet a loop
    assert loop_start("self.a = self.a = self.a = self.a = self.a = self.a = ") == 0
    # code that repeats one character, or a few values, is not a loop
    for text in ("# " + "=" * 30, " " * 24, "[0, 0, 0, 0]", "x = y = z"):
        assert loop_start(text) is None, text
    block = StopRule(True, "", 4)
    assert block.cut("    pass\n    x.y.y.y.y.y.y.y") == len("    pass\n    x")


def test_a_draft_that_makes_the_line_the_line_above_again_is_caught():
    prefix = "def f(self):\n    self.a = 1\n\n    "
    assert repeats_line_above("self.a = 1", "    ", "", prefix)
    assert repeats_line_above("self.a = 1\n    self.b = 2", "    ", "", prefix)  # first line
    assert not repeats_line_above("self.b = 1", "    ", "", prefix)
    assert repeats_line_above("a = 1", "    self.", "", prefix[:-4] + "    self.")  # mid-line
    assert repeats_line_above("a = ", "    self.", "1", prefix[:-4] + "    self.")  # line's rest
    assert not repeats_line_above("self.a = 1", "", "", prefix[:-4])   # another indentation
    assert not repeats_line_above("\n    x = 2", "    self.a = 1", "",
                                  prefix[:-4] + "    self.a = 1")   # the user's own line
    comment = "x = 1\n# note\n"
    assert not repeats_line_above("# note", "", "", comment)         # comments may repeat
    assert not repeats_line_above("x = 1", "", "", "")               # nothing above
