"""Policy tunables (harness.policies.tunables): what each family accepts, checked, and set from
the command line (`harness simulate --policy-param KEY=VALUE`)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.policies.registry import get_policy, params_for
from harness.policies.tunables import PolicyParamError, parse_assignments


def test_a_tunable_reaches_the_policy_with_its_type() -> None:
    plan = get_policy("plan-square-0", params={"cooling_rate": "0.8", "cooling_steps": "5"})
    assert (plan.config.cooling_rate, plan.config.cooling_steps, plan.config.steps_per_temperature) == (
        0.8,
        5,
        6,
    )
    cerberus = get_policy("cerberus", params={"starvation_s": "3600", "profit": "node-seconds"})
    assert (cerberus.config.starvation_s, cerberus.config.knapsack) == (3600.0, True)
    window = get_policy("window-10-1", params={"max_age": 20})
    assert (window.max_age, window.window) == (20, 10)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("cerberus", {"starvation": "1"}, r"no parameter 'starvation' \(did you mean starvation_s\?\)"),
        ("fcfs", {"x": "1"}, r"policy fcfs has no parameter 'x'; its parameters: none"),
        (
            "backfill-1",
            {"will_run": "true"},
            r"\(did you mean slurm_will_run\?\); its parameters: horizon_s, max_job_test, "
            r"slurm_node_reservation, slurm_will_run, ",
        ),
        ("plan-sum-0", {"cooling_rate": "1.5"}, r"cooling_rate: expected a number >= 0.01 and <= 0.999"),
        ("plan-sum-0", {"cooling_steps": "2.5"}, r"cooling_steps: expected an integer"),
        ("plan-sum-0", {"cooling_steps": 2.5}, r"cooling_steps: expected an integer"),
        ("plan-sum-0", {"cooling_rate": "nan"}, r"cooling_rate: expected a number"),
        ("cerberus", {"profit": "gold"}, r"profit: expected one of "),
        ("window-10-1", {"max_age": True}, r"max_age: expected an integer"),
    ],
)
def test_a_wrong_key_or_value_is_named(name: str, params: dict, message: str) -> None:
    with pytest.raises(PolicyParamError, match=message):
        get_policy(name, params=params)


def test_params_go_to_the_policies_that_have_them() -> None:
    shares = params_for(["plan-square-0", "backfill-1"], {"cooling_steps": "5"})
    assert shares == {"plan-square-0": {"cooling_steps": "5"}, "backfill-1": {}}
    with pytest.raises(PolicyParamError, match="no parameter 'max_age'"):
        params_for(["plan-square-0", "backfill-1"], {"max_age": "5"})
    assert parse_assignments(["a=1", " b = x "]) == {"a": "1", "b": "x"}
    for bad in (["a"], ["=1"], ["a=1", "a=2"]):
        with pytest.raises(PolicyParamError, match="--policy-param"):
            parse_assignments(bad)


def test_simulate_takes_policy_params_and_records_them() -> None:
    runner = CliRunner()
    args = ["simulate", "--first-n", "40", "-p", "plan-square-0", "--json", "bundled"]
    plain = json.loads(runner.invoke(main, args).stdout)["plan-square-0"]
    tuned = runner.invoke(
        main, [*args, "--policy-param", "cooling_steps=1", "--policy-param", "max_placements=10"]
    )
    assert tuned.exit_code == 0, tuned.output
    # a search of one cooling step and 10 placements is not the thesis's search
    assert json.loads(tuned.stdout)["plan-square-0"]["mean_wait"] != plain["mean_wait"]
    bad = runner.invoke(main, [*args, "--policy-param", "cooling_rate=2"])
    assert bad.exit_code == 2 and "'--policy-param'" in bad.output and "<= 0.999" in bad.output
    listed = json.loads(runner.invoke(main, ["policies", "--params", "--json"]).stdout)
    assert set(listed["cerberus[-fcfs]"]) == {"profit", "unit_mb", "starvation_s", "window"}


def test_run_checks_the_agents_policy_params_and_keeps_them_for_a_resume() -> None:
    from harness.emulation.run.specs import ReplaySpec, RunOptions, options_from_dict

    runner = CliRunner()
    base = ["run", "--dry-run", "--first-n", "10"]
    ok = runner.invoke(main, [*base, "-p", "plan-square-0", "--policy-param", "cooling_steps=3"])
    assert ok.exit_code == 0, ok.output
    native = runner.invoke(main, [*base, "-p", "slurm-backfill-1", "--policy-param", "cooling_steps=3"])
    assert native.exit_code == 2 and "slurm-*) take no policy tunables" in native.output
    wrong = runner.invoke(main, [*base, "-p", "backfill-1", "--policy-param", "max_age=3"])
    assert wrong.exit_code == 2 and "no parameter 'max_age'" in wrong.output
    opts = RunOptions(replay=ReplaySpec(policy="plan-square-0", policy_params=("cooling_steps=3",)))
    assert options_from_dict(json.loads(json.dumps(opts.as_dict()))) == opts


def test_a_name_carries_tunables_and_an_experiment_sweeps_them(tmp_path) -> None:
    from harness.experiments.results import load_table

    plan = get_policy("plan-square-0[cooling_steps=10;cooling_rate=0.8]")
    assert plan.name == "plan-square-0[cooling_steps=10;cooling_rate=0.8]"
    assert (plan.config.cooling_steps, plan.config.cooling_rate) == (10, 0.8)  # type: ignore[attr-defined]
    with pytest.raises(PolicyParamError, match="no parameter 'x'"):
        get_policy("backfill-1[x=1]")
    exp = tmp_path / "exp.toml"
    exp.write_text(
        '[experiment]\nname = "sweep"\nmode = "simulate"\n[workload]\ntrace = "bundled"\nfirst_n = 30\n'
        '[policies]\nnames = ["plan-square-0[cooling_steps={n}]"]\n[sweep]\nn = [1, 30]\n'
    )
    out = CliRunner().invoke(main, ["experiment", "run", str(exp), "-o", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    table = load_table(tmp_path / "out")
    assert sorted(set(table["policy"])) == [
        "plan-square-0[cooling_steps=1]",
        "plan-square-0[cooling_steps=30]",
    ]
