"""Binder (repo2docker) configuration: what can be checked without Docker or mybinder.org.

* the files in ``binder/`` parse, agree with pyproject.toml (extras, pins, Python version) and cover every
  import the notebooks make;
* ``repo2docker --no-build --debug`` (installed from PyPI into a cached venv when missing) prints the
  Dockerfile it would build: Python 3.12, the apt packages, and ``binder/requirements.txt`` installed from
  the repository root after the repository is copied in (``-e .`` needs the whole tree);
* (slow) ``binder/requirements.txt`` installs into a fresh venv from the repository root, as repo2docker
  runs it, and the notebooks run top to bottom in a kernel of that venv.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"
NOTEBOOKS = REPO / "notebooks"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())

# top-level modules the notebooks may import -> the distribution that provides them
IMPORT_PROVIDERS = {"kafkalab": "kafkalab", "pandas": "pandas", "numpy": "pandas", "pyarrow": "pyarrow",
                    "crc32c": "crc32c", "cramjam": "cramjam", "matplotlib": "matplotlib",
                    "IPython": "jupyterlab", "ipywidgets": "ipywidgets", "anywidget": "anywidget",
                    "confluent_kafka": "confluent-kafka", "kafka": "kafka-python", "pyspark": "pyspark"}
NOTEBOOK_EXTRAS = {"notebook", "spark"}        # JupyterLab and matplotlib; PySpark for notebook 6


def binder_requirements() -> tuple[list[str], list[Requirement]]:
    """(editable targets, other requirements) of binder/requirements.txt."""
    editable, others = [], []
    for line in (BINDER / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith(("-e ", "--editable ")):
            editable.append(line.split(None, 1)[1])
        else:
            assert not line.startswith("-"), f"unexpected option in binder/requirements.txt: {line}"
            others.append(Requirement(line))
    return editable, others


def pyproject_requirements() -> dict[str, Requirement]:
    project = PYPROJECT["project"]
    found: dict[str, Requirement] = {}
    for spec in project["dependencies"] + [s for extra in project["optional-dependencies"].values() for s in extra]:
        requirement = Requirement(spec)
        found.setdefault(canonicalize_name(requirement.name), requirement)
    return found


def notebook_imports() -> set[str]:
    modules: set[str] = set()
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module.split(".")[0])
    return modules


# ---------------------------------------------------------------- the files

def test_requirements_install_this_repository_with_the_notebook_extras():
    editable, others = binder_requirements()
    # repo2docker runs `pip install -r binder/requirements.txt` from the repository root, and pip resolves
    # the path of an editable requirement against the current directory: "." is the repository ("..", the
    # form relative to the file, would point outside it).
    assert len(editable) == 1 and editable[0].startswith(".["), editable
    assert Requirement("kafkalab" + editable[0][1:]).extras == NOTEBOOK_EXTRAS
    assert NOTEBOOK_EXTRAS <= set(PYPROJECT["project"]["optional-dependencies"])
    # anything else is pinned exactly as pyproject.toml pins it (the clients the notebooks drive)
    known = pyproject_requirements()
    for requirement in others:
        name = canonicalize_name(requirement.name)
        assert name in known, f"{requirement} is not a kafkalab dependency or extra"
        assert requirement.specifier == known[name].specifier, (requirement, known[name])


def test_requirements_cover_every_notebook_import():
    _, others = binder_requirements()
    provided = {"kafkalab"} | {canonicalize_name(r.name) for r in others}
    provided |= {canonicalize_name(Requirement(s).name) for s in PYPROJECT["project"]["dependencies"]}
    provided |= {canonicalize_name(Requirement(s).name) for extra in NOTEBOOK_EXTRAS
                 for s in PYPROJECT["project"]["optional-dependencies"][extra]}
    for module in sorted(notebook_imports()):
        if module in sys.stdlib_module_names:
            continue
        assert module in IMPORT_PROVIDERS, f"a notebook imports {module!r}: add it to binder/requirements.txt"
        assert canonicalize_name(IMPORT_PROVIDERS[module]) in provided, module


def test_runtime_apt_and_post_build():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    assert runtime == "python-3.12"
    assert Version(runtime.split("-", 1)[1]) in SpecifierSet(PYPROJECT["project"]["requires-python"])
    packages = [line.strip() for line in (BINDER / "apt.txt").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert "openjdk-17-jre-headless" in packages          # PySpark's JVM (notebook 6)
    # the JDK's own location is found by PySpark from the PATH: a hard-coded JAVA_HOME breaks on the next image
    assert not any("JAVA_HOME" in p.read_text() for p in BINDER.iterdir() if p.is_file())
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", p) for p in packages), packages
    post_build = BINDER / "postBuild"
    if post_build.exists():              # only errors under `set -e` stop a Binder build
        lines = post_build.read_text().splitlines()
        assert lines[0].startswith("#!") and any(line.strip().startswith("set -e") for line in lines[:5])
        assert os.access(post_build, os.X_OK)
    assert not (BINDER / "start").exists() or (BINDER / "start").read_text().rstrip().endswith('exec "$@"')


# ---------------------------------------------------------------- repo2docker's view

@pytest.fixture(scope="module")
def repo2docker(tmp_path_factory, request) -> list[str]:
    """A repo2docker command: this environment's, else one installed from PyPI into a cached venv."""
    try:
        import repo2docker  # noqa: F401
        return [sys.executable, "-m", "repo2docker"]
    except ImportError:
        pass
    cache = getattr(request.config, "cache", None)           # reused between runs; one per xdist worker
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    home = Path(cache.mkdir(f"repo2docker-venv-{worker}")) if cache is not None else tmp_path_factory.mktemp("r2d")
    python = home / "bin" / "python"
    if not python.exists() or subprocess.run([str(python), "-m", "repo2docker", "--version"],
                                             capture_output=True).returncode:
        venv.create(home, with_pip=True, clear=True)
        installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "jupyter-repo2docker"],
                                   capture_output=True, text=True, timeout=300)
        if installed.returncode:
            pytest.skip("jupyter-repo2docker could not be installed from PyPI (needed only for this check): "
                        + installed.stderr.strip()[-500:])
    return [str(python), "-m", "repo2docker"]


def test_repo2docker_dockerfile(repo2docker):
    run = subprocess.run(repo2docker + ["--no-build", "--debug", str(REPO)], capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    dockerfile = run.stdout
    # the base environment's lock file, named in COPY lines with "." and "-" escaped as -2e and -2d
    assert re.search(r"environment(\.|-2e)py(-|-2d)3(\.|-2e)12(-|-2d)linux", dockerfile), \
        "runtime.txt's Python 3.12 was not picked up"
    assert "python=3.12" in run.stderr
    apt = re.search(r"apt-get install --yes --no-install-recommends ([^&]+)&&", dockerfile)
    assert apt and "openjdk-17-jre-headless" in apt.group(1).split()
    pip_line = 'pip install --no-cache-dir -r "binder/requirements.txt"'
    lines = dockerfile.splitlines()
    install = next(i for i, line in enumerate(lines) if pip_line in line)
    copy_repo = next(i for i, line in enumerate(lines) if re.match(r"COPY .*src/ \$\{REPO_DIR\}/$", line))
    assert copy_repo < install, "requirements with -e . must be installed after the repository is copied in"
    workdirs = [line for line in lines[:install] if line.startswith("WORKDIR ")]
    assert workdirs and workdirs[-1] == "WORKDIR ${REPO_DIR}"      # pip runs from the repository root
    assert "pip install --no-cache-dir ." not in dockerfile         # binder/ wins: pyproject.toml not installed twice


def test_base_image_jupyterlab_satisfies_the_notebook_extra(repo2docker):
    """repo2docker's base environment already has JupyterLab and ipywidgets: the notebook extra must accept
    those versions, so that pip keeps them instead of reinstalling JupyterLab."""
    where = subprocess.run(repo2docker[:1] + ["-c", "import repo2docker, os; print(os.path.dirname(repo2docker.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    lock = Path(where) / "buildpacks" / "conda" / "environment.py-3.12-linux-64.lock"
    if not lock.exists():
        pytest.skip(f"this repo2docker has no {lock.name}")
    pinned = dict(re.findall(r"/(jupyterlab|ipywidgets)-(\d+(?:\.\d+)+)-", lock.read_text()))
    assert set(pinned) == {"jupyterlab", "ipywidgets"}
    project = PYPROJECT["project"]        # ipywidgets is a core dependency, JupyterLab in the notebook extra
    extra = {canonicalize_name(Requirement(s).name): Requirement(s)
             for s in project["dependencies"] + project["optional-dependencies"]["notebook"]}
    for name, version in pinned.items():
        assert Version(version) in extra[name].specifier, (name, version, str(extra[name]))


# ---------------------------------------------------------------- install for real (slow)

RUNNER = r"""
import json, sys, time
import nbformat
from nbclient import NotebookClient

results = {}
for path in sys.argv[2:]:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import sys, json, kafkalab; print(json.dumps([sys.prefix, kafkalab.__file__]))"))
    start = time.monotonic()
    NotebookClient(nb, timeout=150, kernel_name="python3", resources={"metadata": {"path": sys.argv[1]}}).execute()
    output = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    results[path] = {"seconds": round(time.monotonic() - start, 1), "kernel": json.loads(output.strip().splitlines()[-1])}
print(json.dumps(results))
"""


@pytest.mark.slow
def test_binder_requirements_install_into_a_fresh_venv_and_run_the_notebooks(tmp_path):
    env_dir = tmp_path / "binder-venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    isolated = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    isolated.update(JUPYTER_DATA_DIR=str(tmp_path / "jupyter-data"), JUPYTER_CONFIG_DIR=str(tmp_path / "jupyter-config"),
                    IPYTHONDIR=str(tmp_path / "ipython"), MPLBACKEND="Agg", MPLCONFIGDIR=str(tmp_path / "mpl"))
    # as repo2docker does: from the repository root; pip's own cache is kept (repo2docker disables it)
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r",
                              "binder/requirements.txt"], cwd=REPO, env=isolated, capture_output=True, text=True,
                             timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    check = subprocess.run([str(python), "-m", "pip", "check"], env=isolated, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    notebooks = sorted(str(p) for p in NOTEBOOKS.glob("*.ipynb"))
    run = subprocess.run([str(python), "-c", RUNNER, str(NOTEBOOKS)] + notebooks, cwd=tmp_path, env=isolated,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    results = json.loads(run.stdout.strip().splitlines()[-1])
    assert sorted(results) == notebooks
    for path, result in results.items():
        prefix, module = result["kernel"]
        assert Path(prefix).resolve() == env_dir.resolve(), f"{path} ran outside the Binder venv: {prefix}"
        assert Path(module).resolve().is_relative_to(REPO.resolve()), "kafkalab is the editable install of this repo"
        limit = 150 if "spark" in Path(path).name else 60          # notebook 6 starts a JVM and runs Spark jobs
        assert result["seconds"] < limit, (path, result["seconds"])
