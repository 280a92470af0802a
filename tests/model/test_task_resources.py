"""`resources:` of a task: parsed once at load, refused with the field and the fix."""

from __future__ import annotations

import pytest

from tui.model.task import Task


def test_resources_parse_to_ray_options(load_ok):
    result = load_ok(
        """
        name: big
        resources: {num_cpus: 1, memory: 2GiB, custom: {gpu_box: 1}}
        agent: {instructions: x}
        """
    )
    res = result.tasks[0].resources
    assert res is not None
    assert res.ray_options() == {
        "num_cpus": 1.0,
        "memory": 2 * 1024**3,
        "resources": {"gpu_box": 1.0},
    }
    # Stored and read back as written.
    dumped = result.tasks[0].to_yaml_dict()["resources"]
    assert dumped == {
        "num_cpus": 1.0,
        "memory": "2GiB",
        "custom": {"gpu_box": 1.0},
        "labels": {},
    }
    assert Task.model_validate(result.tasks[0].to_yaml_dict()).resources == res


def test_labels_become_the_label_selector(load_ok):
    result = load_ok(
        """
        name: eu
        resources: {labels: {zone: eu, example.com/rack: 3}}
        agent: {instructions: x}
        """
    )
    res = result.tasks[0].resources
    assert res is not None
    assert res.ray_options() == {"label_selector": {"zone": "eu", "example.com/rack": "3"}}
    dumped = result.tasks[0].to_yaml_dict()["resources"]
    assert dumped["labels"] == {"zone": "eu", "example.com/rack": "3"}
    assert Task.model_validate(result.tasks[0].to_yaml_dict()).resources == res


@pytest.mark.parametrize(
    ("value", "unit"), [("512MiB", 512 * 1024**2), ("1.5GB", 1_500_000_000), (1000, 1000)]
)
def test_memory_sizes(load_ok, value, unit):
    text = f"name: m\nresources: {{memory: {value}}}\nagent: {{instructions: x}}\n"
    res = load_ok(text).tasks[0].resources
    assert res is not None and res.memory == unit


def test_no_resources_is_none(load_ok):
    assert load_ok("name: a\nagent: {instructions: x}\n").tasks[0].resources is None


@pytest.mark.parametrize(
    ("resources", "field", "message", "fix"),
    [
        ("{memory: lots}", "resources.memory", "must be a size; got 'lots'", "2GiB"),
        ("{num_cpus: -1}", "resources.num_cpus", "must be >= 0", ">= 0"),
        ("{custom: {CPU: 1}}", "resources.custom", "one of Ray's own", "num_cpus:"),
        ("{custom: {gpu_box: many}}", "resources.custom", "gpu_box must be a number", "ray start"),
        ("{custom: [gpu_box]}", "resources.custom", "must be a mapping", "custom: {gpu_box: 1}"),
        ("{gpus: 1}", "resources.gpus", "unknown key 'gpus'", "num_cpus, memory, custom"),
        ("{labels: [zone]}", "resources.labels", "must be a mapping", "labels: {zone: eu}"),
        ("{labels: {zone: -eu}}", "resources.labels", "zone must be a label value", "--labels"),
        ("{labels: {zone: {a: b}}}", "resources.labels", "zone must be a label value", "1-63"),
        ("{labels: {'a b': eu}}", "resources.labels", "'a b' is not a node label", "prefix/"),
    ],
)
def test_bad_resources_name_field_and_fix(one_error, resources, field, message, fix):
    issue = one_error(f"name: a\nresources: {resources}\nagent: {{instructions: x}}\n")
    assert issue.field == field
    assert issue.line == 2
    assert message in issue.message
    assert fix in issue.fix
