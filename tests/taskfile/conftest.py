"""A project with a `.agent/Taskfile.yml` for the real go-task binary."""

from __future__ import annotations

from pathlib import Path

import pytest

TASKFILE = """\
version: '3'
tasks:
  echo-args:
    desc: Print each argument on its own line
    cmds:
      - for a in {{.CLI_ARGS}}; do printf '<%s>\\n' "$a"; done
  fail:
    desc: Fail with exit code 7
    cmds:
      - echo about to fail >&2
      - exit 7
  helper:
    internal: true
    desc: Hidden from every list
    cmds: [echo helper]
  undescribed:
    cmds: [echo no description]
"""


def write_taskfile(project: Path, text: str = TASKFILE) -> Path:
    path = project / ".agent" / "Taskfile.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(project: Path) -> Path:
    """The shared project fixture, with the Taskfile above in it."""
    write_taskfile(project)
    return project


# Constructs met in public Taskfiles (large Go projects, homelab repos), written afresh:
# a `label:`, `aliases:`, wildcard tasks using {{.MATCH}}, a `prompt:`, `requires: vars`, a
# task described only by its `summary:`, a multi-line `desc:`, an internal task and an
# included file.
REAL_CONSTRUCTS = """\
version: '3'
includes:
  docker: ./docker.yml
tasks:
  build:
    label: 'build-{{.OS}}'
    desc: Build for one OS
    aliases: [b]
    vars: {OS: plan9}
    cmds: ['echo built for {{.OS}}']
  release:*:
    desc: Tag a release
    vars:
      VERSION: '{{index .MATCH 0}}'
    cmds: ['echo releasing {{.VERSION}}']
  deploy:
    desc: Deploy to production
    prompt: Deploy to production now?
    cmds: ['touch deployed', 'echo deployed']
  greet:
    desc: Greet someone
    requires:
      vars: [WHO]
    cmds: ['echo hello {{.WHO}} args={{.CLI_ARGS}}']
  notes:
    summary: |
      Print the release notes.

      Reads CHANGELOG.md.
    cmds: ['echo notes']
  long:
    desc: |
      First line of a long description
      and its second line
    cmds: ['echo long']
  secret:
    internal: true
    cmds: ['echo secret']
"""
DOCKER_INCLUDE = """\
version: '3'
tasks:
  compose:*:*:
    desc: Run docker compose ACTION on a stack
    cmds: ['echo compose {{index .MATCH 0}} {{index .MATCH 1}}']
"""


def write_real_constructs(project: Path) -> Path:
    path = write_taskfile(project, REAL_CONSTRUCTS)
    (path.parent / "docker.yml").write_text(DOCKER_INCLUDE)
    return path
