"""The cluster image: its build context and its tag.

The context is assembled in a temporary folder from the resources (the checkout's, or the
copy a non-editable install carries, :func:`harness.model.paths.resource_root`) and the
package's own sources, so the same files build the same image from either. The tag is a
hash of exactly those files: a change to any of them gives a new image.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import docker.errors

from harness.cluster.base import ClusterError
from harness.model.paths import PACKAGE_ROOT, resource_root

IMAGE_REPO = "harness-slurm"
CONTEXT_FILES = ("containers/Dockerfile", "containers/entrypoint.sh", "pyproject.toml", "README.md")
CONTEXT_DIRS = ("sigsleep", "slurm-templates")
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
EXTRA_CA = "containers/extra-ca"


def _wanted(path: Path) -> bool:
    return (
        path.is_file()
        and "__pycache__" not in path.parts
        and path.suffix not in (".pyc", ".o")
        and path.name != "sigsleep"  # the binary a local `make` leaves
    )


def context_files() -> dict[str, Path]:
    """Name in the build context -> the file it comes from, sorted by name."""
    root = resource_root()
    files = {name: root / name for name in CONTEXT_FILES}
    for folder in CONTEXT_DIRS:
        files |= {str(p.relative_to(root)): p for p in (root / folder).rglob("*") if _wanted(p)}
    for p in PACKAGE_ROOT.rglob("*"):
        rel = p.relative_to(PACKAGE_ROOT)
        if _wanted(p) and rel.parts[0] != "_resources":
            files[str("harness" / rel)] = p
    return dict(sorted(files.items()))


def image_tag() -> str:
    """``harness-slurm:<hash of the build context>``, so stale images are never reused."""
    digest = hashlib.sha256()
    for name, path in context_files().items():
        digest.update(name.encode())
        digest.update(path.read_bytes())
    return f"{IMAGE_REPO}:{digest.hexdigest()[:12]}"


def write_build_context(target: Path) -> None:
    """Copy the context into ``target``, with the host's extra CAs in ``containers/extra-ca``
    (the image build then trusts the same TLS-intercepting proxies as the host)."""
    for name, path in context_files().items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / name)
    (target / EXTRA_CA).mkdir(parents=True, exist_ok=True)
    for cert in HOST_CA_DIR.glob("*.crt"):
        shutil.copyfile(cert, target / EXTRA_CA / cert.name)


def ensure_image(
    client: docker.DockerClient, progress: Callable[[str], None], rebuild: bool = False
) -> tuple[str, bool]:
    """The image of the current sources (built unless it exists or ``rebuild``): (tag, built now)."""
    tag = image_tag()
    if not rebuild:
        try:
            client.images.get(tag)
            return tag, False
        except docker.errors.ImageNotFound:
            pass
    _require_base_image(client)
    progress(f"building image {tag} (first time: a few minutes)")
    for chunk in _build(client, tag):
        if "error" in chunk:
            raise ClusterError(f"image build failed: {chunk['error'].strip()}")
        line = chunk.get("stream", "").strip()
        if line.startswith("Step "):
            progress(f"  {line}")
    client.images.get(tag).tag(IMAGE_REPO, "latest")
    return tag, True


def _build(client: docker.DockerClient, tag: str) -> Iterator[dict]:
    with tempfile.TemporaryDirectory(prefix="harness-image-") as context:
        write_build_context(Path(context))
        # docker-py sends the context (as a tar) before returning the log stream.
        return client.api.build(
            path=context,
            dockerfile="containers/Dockerfile",
            tag=tag,
            network_mode="host",
            rm=True,
            forcerm=True,
            decode=True,
        )


def _require_base_image(client: docker.DockerClient) -> None:
    try:
        client.images.get("debian:trixie-slim")
    except docker.errors.ImageNotFound:
        raise ClusterError(
            "base image debian:trixie-slim is missing and no registry may be reachable: "
            "run `bash containers/make-base-image.sh` (debootstrap + docker import)"
        ) from None
