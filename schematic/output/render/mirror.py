"""What a disconnected site must mirror for a pool, and how to build its installer offline.

Per pool (one release, one schematic): the installer the nodes upgrade to, every boot medium of
the platform, each extension image with its digest from the lock file (``--live-catalogue``
writes it; where the lock is missing or names no such extension the digest is said to be
unknown, never guessed), a board overlay's image, and what ``imager`` needs to build the same
installer without an Image Factory: the imager image and ``installer-base`` (siderolabs/talos @
ad8823176e75b9cd07647ddde13c34f2ab77c663, ``pkg/images/images.go``:
``DefaultImagerImageRepository``, ``DefaultInstallerBaseImageRepository``).

Three texts: a plain list, a ``skopeo copy`` script (containers/skopeo @
b71619af4512a2c77dd160576492d4ebbc0b63ea, ``docs/skopeo-copy.1.md``: ``skopeo copy [options]
SOURCE DEST``, ``docker://`` references, ``--all``, ``--preserve-digests``) and an imager
profile (siderolabs/talos ``pkg/imager/profile/profile.go``, ``input.go``, ``output.go`` at the
commit above: ``arch``, ``platform``, ``secureboot``, ``version``, ``customization``,
``input.baseInstaller`` / ``systemExtensions``, ``output.kind: installer``, ``outFormat: raw``).

The factory adds to every image it builds a "virtual" extension named ``schematic`` whose
version is the schematic ID (siderolabs/image-factory @
26b95cacb0846378fa5ed75e397eb732d6500c0a, ``internal/artifacts/schematic.go``,
``internal/profile/profile.go`` ``EnhanceFromSchematic``): the script builds the same tarball
and the profile lists it, so the installer built offline reports the factory's ID.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from schematic.output.render import yamltext
from schematic.plan.cluster import PoolPlan

__all__ = [
    "IMAGER_REPOSITORY",
    "INSTALLER_BASE_REPOSITORY",
    "LockedImage",
    "MirrorImage",
    "imager_profile",
    "locked_images",
    "mirror_images",
    "mirror_list",
    "mirror_script",
]

IMAGER_REPOSITORY = "ghcr.io/siderolabs/imager"
INSTALLER_BASE_REPOSITORY = "ghcr.io/siderolabs/installer-base"
# The name and the tarball path of the factory's virtual extension (image-factory
# pkg/constants SchematicIDExtensionName; its only file is rootfs/usr/local/share/schematic/<ID>).
SCHEMATIC_EXTENSION = "schematic"
_UNKNOWN = "digest unknown: run talos-schematic generate CLUSTER --out DIR --live-catalogue"


@dataclass(frozen=True)
class LockedImage:
    """An extension's (or overlay's) image as the lock file pins it."""

    ref: str
    digest: str


@dataclass(frozen=True)
class MirrorImage:
    """One container image to mirror: ``reference`` None when only its name is known."""

    what: str
    reference: str | None
    digest: str | None = None

    @property
    def pinned(self) -> str | None:
        """``<ref>@<digest>`` when the digest is known, else the reference (or None)."""
        if self.reference is None:
            return None
        return f"{self.reference}@{self.digest}" if self.digest else self.reference


def locked_images(lock: str | None, version: str) -> dict[str, LockedImage]:
    """The lock text's images by extension (and overlay) name, when it is for ``version``."""
    if not lock:
        return {}
    document = yaml.safe_load(lock)
    if not isinstance(document, dict) or document.get("talosVersion") != version:
        return {}
    found: dict[str, LockedImage] = {}
    for entry in [*(document.get("extensions") or ()), *(document.get("overlays") or ())]:
        if isinstance(entry, dict) and all(
            isinstance(entry.get(k), str) for k in ("ref", "digest")
        ):
            found[str(entry.get("name"))] = LockedImage(entry["ref"], entry["digest"])
    return found


def _schematic_extensions(pool: PoolPlan) -> tuple[str, ...]:
    # In the schematic's own order: the order is part of its ID and of the image.
    return pool.schematic.extensions


def mirror_images(pool: PoolPlan, lock: str | None) -> list[MirrorImage]:
    """Every container image of the pool: its installer, each extension, the board overlay,
    the imager and installer-base of its release."""
    version = str(pool.talos.version)
    locked = locked_images(lock, version)
    images = [MirrorImage("installer", pool.references.installer)]
    for name in _schematic_extensions(pool):
        known = locked.get(name)
        images.append(
            MirrorImage(
                f"extension {name}",
                known.ref if known else None,
                known.digest if known else None,
            )
        )
    overlay = pool.media.overlay
    if overlay is not None:
        known = locked.get(overlay.name)
        images.append(
            MirrorImage(
                f"overlay {overlay.name}",
                known.ref if known else overlay.image or None,
                known.digest if known else None,
            )
        )
    images.append(MirrorImage("imager", f"{IMAGER_REPOSITORY}:{version}"))
    images.append(MirrorImage("installer-base", f"{INSTALLER_BASE_REPOSITORY}:{version}"))
    return images


def _head(pool: PoolPlan) -> list[str]:
    return [
        f"# pool {pool.name}: Talos {pool.talos.version}, schematic {pool.schematic_id}",
    ]


def mirror_list(pool: PoolPlan, lock: str | None) -> str:
    """One line per image (``image <ref>[@<digest>]``) and boot medium (``file <url>``)."""
    lines = _head(pool)
    for image in mirror_images(pool, lock):
        if image.pinned is None:
            lines.append(f"# {image.what}: {_UNKNOWN}")
        else:
            lines.append(f"image {image.pinned}")
            if image.digest is None and image.what.startswith(("extension", "overlay")):
                lines.append(f"# {image.what}: {_UNKNOWN}")
    lines += [
        f"file {medium.url}" for medium in pool.references.media if medium.kind != "installer"
    ]
    return "\n".join(lines) + "\n"


def _parts(image: MirrorImage) -> tuple[str, str | None]:
    """The image's repository and tag (None when the reference names none)."""
    assert image.reference is not None
    path = image.reference.split("@", 1)[0]
    name, colon, tag = path.rpartition(":")
    if colon and "/" not in tag:
        return name, tag
    return path, None


def _copy(image: MirrorImage) -> str:
    """``skopeo copy`` of one image into ``$REGISTRY``, under its path without the host.

    The source is pinned by digest alone where it is known: skopeo's docker transport refuses
    a reference with both a tag and a digest (containers/image ``docker/docker_transport.go``
    ``newReference``, vendored by skopeo at the commit above); the destination keeps the tag,
    and ``--preserve-digests`` the digest."""
    repository, tag = _parts(image)
    source = f"{repository}@{image.digest}" if image.digest else f"{repository}:{tag}"
    host, _, rest = repository.partition("/")
    path = rest if "." in host or ":" in host or host == "localhost" else repository
    destination = f"{path}:{tag}" if tag else f"{path}@{image.digest}"
    return (
        f"skopeo copy --all --preserve-digests docker://{_quote(source)} "
        f'docker://"$REGISTRY"/{_quote(destination)}'
    )


def _quote(word: str) -> str:
    import shlex

    return shlex.quote(word)


def _schematic_tarball(pool: PoolPlan) -> list[str]:
    """Shell that builds the factory's virtual schematic extension as a tarball."""
    schematic_id = pool.schematic_id
    manifest = yamltext.dump(
        {
            "version": "v1alpha1",
            "metadata": {
                "name": SCHEMATIC_EXTENSION,
                "version": schematic_id,
                "author": "talos-schematic",
                "description": "Virtual extension which specifies the schematic of the image.",
                "compatibility": {"talos": {"version": ">= 1.0.0"}},
                "extraInfo": pool.canonical,
            },
        }
    )
    # Where the imager container sees it: docker run -v $PWD/_out:/out.
    directory = f"_out/schematic-{schematic_id}"
    return [
        "# The factory's virtual 'schematic' extension, so the installer reports the same ID.",
        f"mkdir -p {directory}/rootfs/usr/local/share/schematic",
        f": > {directory}/rootfs/usr/local/share/schematic/{schematic_id}",
        f"cat > {directory}/manifest.yaml <<'EOF'",
        *manifest.splitlines(),
        "EOF",
        f"tar -C {directory} -cf {directory}.tar manifest.yaml rootfs",
    ]


def mirror_script(pool: PoolPlan, lock: str | None) -> str:
    """A ``skopeo copy`` per image into ``$REGISTRY``, a ``curl`` per boot medium into
    ``media/``, and the schematic extension tarball the imager profile names."""
    lines = [
        "#!/bin/sh",
        *_head(pool),
        "# REGISTRY: the registry the disconnected site pulls from (e.g. registry.example:5000).",
        "set -eu",
        ': "${REGISTRY:?set REGISTRY to the registry the site pulls from}"',
    ]
    for image in mirror_images(pool, lock):
        if image.pinned is None:
            lines.append(f"# {image.what}: {_UNKNOWN}")
            continue
        lines.append(_copy(image))
    for medium in pool.references.media:
        if medium.kind == "installer":
            continue
        name = medium.url.split("://", 1)[-1]
        lines.append(f"curl -fL --create-dirs -o {_quote(f'media/{name}')} {_quote(medium.url)}")
    lines += _schematic_tarball(pool)
    return "\n".join(lines) + "\n"


def _platform(pool: PoolPlan) -> str:
    """The platform the installer is for: ``<platform>-installer``'s, else metal."""
    repository = pool.references.installer_repository.rpartition("/")[2]
    platform = repository.removesuffix("-installer") if repository.endswith("-installer") else ""
    return platform or "metal"


def imager_profile(pool: PoolPlan, lock: str | None) -> str:
    """An imager profile that builds the pool's installer from the mirrored images."""
    version = str(pool.talos.version)
    images = {image.what: image for image in mirror_images(pool, lock)}
    extensions: list[dict[str, Any]] = []
    unknown = []
    for name in _schematic_extensions(pool):
        image = images[f"extension {name}"]
        if image.pinned is None:
            unknown.append(name)
        extensions.append({"imageRef": image.pinned or ""})
    extensions.append({"tarballPath": f"/out/schematic-{pool.schematic_id}.tar"})
    secure = pool.media.secureboot_enabled
    profile: dict[str, Any] = {
        "arch": pool.profile.architecture,
        "platform": _platform(pool),
        "secureboot": secure,
        "version": version,
    }
    if pool.kernel_args:
        profile["customization"] = {"extraKernelArgs": list(pool.kernel_args)}
    inputs: dict[str, Any] = {
        "baseInstaller": {"imageRef": f"{INSTALLER_BASE_REPOSITORY}:{version}"},
        "systemExtensions": extensions,
    }
    if secure:
        # The factory signs with its own keys; an offline build signs with the site's.
        inputs["secureboot"] = {
            "secureBootSigner": {
                "keyPath": "/secureboot/uki-signing-key.pem",
                "certPath": "/secureboot/uki-signing-cert.pem",
            },
            "pcrSigner": {"keyPath": "/secureboot/pcr-signing-key.pem"},
        }
    profile["input"] = inputs
    profile["output"] = {"kind": "installer", "outFormat": "raw"}
    head = [
        *_head(pool),
        "# Builds the pool's installer offline: docker run --rm -i -v $PWD/_out:/out "
        f"{IMAGER_REPOSITORY}:{version} - < imager-profile.yaml",
    ]
    if unknown:
        head.append(f"# incomplete: {', '.join(unknown)}: {_UNKNOWN}")
    return "\n".join(head) + "\n" + yamltext.dump(profile)
