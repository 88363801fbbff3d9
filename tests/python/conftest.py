"""Shared pieces of the Python package's tests (run by ctest through the virtual
environment tests/python/install_package.sh makes; see tests/python/CMakeLists.txt).

OG_SHARED_DIR: the shared test data (default ../shared beside the checkout);
OG_BUILD_DIR: the CMake build folder (node-test data, model-maker packages).
Missing data skips loudly (pytest -rs prints every reason)."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("OG_SHARED_DIR", os.path.join(os.path.dirname(ROOT), "shared"))
BUILD = os.environ.get("OG_BUILD_DIR", os.path.join(ROOT, "build"))
ORTGENAI = os.path.join(SHARED, "models", "ortgenai")
GPT2 = os.path.join(ORTGENAI, "hf-internal-testing", "tiny-random-gpt2-fp32")


def need_package(path: str) -> str:
    if not os.path.isfile(os.path.join(path, "genai_config.json")):
        pytest.skip(f"{path} is missing (the shared test models are not beside the project, "
                    "or the fixture that makes it did not run)")
    return path


@pytest.fixture(scope="session")
def gpt2_dir() -> str:
    return need_package(GPT2)


@pytest.fixture(scope="session")
def og():
    import onnx_genai
    return onnx_genai


@pytest.fixture(scope="session")
def gpt2(og, gpt2_dir):
    return og.Model(gpt2_dir)
