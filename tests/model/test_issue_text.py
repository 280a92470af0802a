from tui.model.issues import Issue, TaskFileError
from tui.model.suggest import did_you_mean


def test_issue_str_full():
    issue = Issue("t.yaml", 3, "tasks[0].priority", "priority is wrong", "use high")
    assert str(issue) == "t.yaml:3: tasks[0].priority: priority is wrong. Fix: use high"
    assert issue.severity == "error"


def test_issue_str_without_line_or_field():
    assert str(Issue("t.yaml", None, "", "file not found", "check the path")) == (
        "t.yaml: file not found. Fix: check the path"
    )


def test_issue_str_keeps_question_mark():
    issue = Issue("t.yaml", 1, "agent.type", "got 'bsh'; did you mean 'shell'?", "use shell")
    assert str(issue) == "t.yaml:1: agent.type: got 'bsh'; did you mean 'shell'? Fix: use shell"


def test_task_file_error_joins_issues():
    issues = [Issue("a.yaml", 1, "name", "m1", "f1"), Issue("b.yaml", 2, "agent", "m2", "f2")]
    error = TaskFileError(issues)
    assert str(error).splitlines() == [str(i) for i in issues]
    assert error.issues == issues


def test_did_you_mean_spelling_variants():
    keys = ["depends_on", "description", "priority"]
    for word in ("depends-on", "dependsOn", "Depends_On", "DEPENDS_ON", "dependson"):
        assert did_you_mean(word, keys) == ["depends_on"]
    assert did_you_mean("priorty", keys) == ["priority"]
    assert did_you_mean("zzz", keys) == []
