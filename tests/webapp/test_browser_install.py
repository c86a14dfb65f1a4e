"""The test command's installer of the web app tests' browser
(support/browser.py): it returns at once when the browser is there, says
in one line why when apt-get cannot install it, and starts in the
background only for a run that includes tests/webapp/."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.browser import CHROMIUM, install_chromium, runs_webapp_tests
from support.paths import REPO


def test_a_browser_that_is_there_is_not_installed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    there = tmp_path / "chromium"
    there.write_text("#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # apt-get, if run, would not be found
    assert install_chromium(there) is None
    assert install_chromium() is None  # this machine's, installed by the run if it was missing
    assert CHROMIUM.exists()


def test_a_browser_apt_get_cannot_install_is_one_line_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    reason = install_chromium(tmp_path / "missing-chromium")
    assert reason is not None and "\n" not in reason
    assert reason.startswith("could not run apt-get to install chromium")


@pytest.mark.parametrize(
    ("args", "included"),
    [
        (["tests"], True),
        (["tests/webapp"], True),
        (
            ["tests/webapp/test_webapp_chat.py::test_a_message_is_sent_from_the_keyboard_alone"],
            True,
        ),
        (["."], True),
        (["tests/storage", "tests/server/test_server_api.py"], False),
    ],
)
def test_the_install_starts_only_for_runs_with_the_web_app_tests(
    args: list[str], included: bool
) -> None:
    assert runs_webapp_tests(args, REPO) is included
