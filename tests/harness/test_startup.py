"""The lm-eval start-up hook's wrappers: an unexpected error of ours costs the feature, never
lm-eval's own behaviour."""


def test_hook_wrappers_fall_back_to_lm_eval_on_unexpected_errors(monkeypatch, capsys):
    import lm_eval.api.group as group_module
    import lm_eval.utils as utils_module

    from adept_eval.harness import startup as lm_eval_plugin
    from adept_eval import suites

    lm_eval_plugin.register()
    table = {"results": {"adept_emotion_female": {"alias": "adept_emotion_female", "n,none": 20.0,
                                                  "acc,none": 0.5, "acc_stderr,none": "N/A",
                                                  "n_stderr,none": "N/A"}},
             "versions": {"adept_emotion_female": 1.0}, "n-shot": {"adept_emotion_female": 0},
             "higher_is_better": {"adept_emotion_female": {"acc": True, "n": True}}}
    text = utils_module.make_table(table)
    lines = [ln for ln in text.splitlines() if "|" in ln][2:]
    assert "acc" in lines[0] and "| 20 " in lines[1].replace("|20", "| 20") and "↑" not in lines[1]
    # a broken suite registry (an error of ours) costs the feature, never lm-eval's table
    monkeypatch.setattr(suites, "suite_of", lambda name: 1 / 0)
    assert utils_module.make_table(table)
    assert "falling back" in capsys.readouterr().err
    assert getattr(group_module.Group.aggregate, "_adept_eval", False)
