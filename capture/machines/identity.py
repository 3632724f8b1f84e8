"""What a platform is, stored beside its fragments: docs/_fragments/<key>/platform.json.

Everything that needs to know what a platform is (its name for readers, whether it has a GPU,
which device each role maps to, how its fragments are regenerated) reads this file, never the
key string. `regenerate` writes it; a store from before this file existed is read through its
fragments' metadata instead (same facts, recorded by every run).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from capture.machines import fingerprint as fpmod
from capture.system import regular
from capture.storage.keys import check_platform_key
from capture.machines.platform import display_name

FILE = "platform.json"
SCHEMA = 2  # 2: the machine's fingerprint is stored (capture/machines/fingerprint.py)
# Device names grouped into the families that claims are scoped by.
FAMILIES = {"cpu": "cpu", "flex": "cpu", "cuda": "cuda", "vulkan": "vulkan", "metal": "metal", "mps": "mps", "wgpu": "wgpu"}


def family(device: str | None) -> str | None:
    return FAMILIES.get(device or "", device)


@dataclass(frozen=True)
class Identity:
    key: str
    display_name: str
    os: str = ""  # linux | macos
    arch: str = ""
    os_pretty: str = ""
    cpu: str = ""
    cores: int | None = None
    memory_gib: float | None = None
    gpu: str | None = None  # "NVIDIA H200", "Apple M2 Max"
    gpu_vendor: str | None = None  # nvidia | apple
    gpu_driver: str | None = None
    # role -> framework -> device ("cpu": {"torch": "cpu", "burn": "flex", ...}); a role the machine lacks is absent
    roles: dict = field(default_factory=dict)
    # how fragments of this platform are made: "regenerate" (it builds and runs) or "bundle"
    # (binaries built elsewhere and carried over, `python -m capture bundle` + `bash .device/run.sh`);
    # "yours" for the reader's own machine (capture/machines/yours.py: `nox -s yours`, never stored in a file)
    route: str = "regenerate"
    bundle: dict = field(default_factory=dict)  # for route "bundle": {"env": {...}, "args": [...]}
    # the machine this platform is (capture/machines/fingerprint.py); None in files written before schema 2,
    # whose fingerprint is then read from the fields above
    fingerprint: dict | None = None
    schema: int = SCHEMA

    @property
    def host(self) -> dict:
        """The fingerprint of this platform's machine."""
        if self.fingerprint is not None:
            return fpmod.normal(self.fingerprint)
        return fpmod.of_machine({"arch": self.arch, "cpu": self.cpu, "cores": self.cores, "memory_gib": self.memory_gib,
                                 "gpu": self.gpu, "os_pretty": self.os_pretty})

    @property
    def has_gpu(self) -> bool:
        return bool(self.roles.get("gpu"))

    def device(self, role: str, framework: str) -> str | None:
        return (self.roles.get(role) or {}).get(framework)

    def role_label(self, role: str) -> str:
        """A tab or row name for one role of this machine: "NVIDIA H200 · Linux · GPU", "... · CPU"."""
        if role == "cpu" and not self.has_gpu:
            return self.display_name
        return f"{self.display_name} · {'GPU' if role == 'gpu' else 'CPU'}"

    @property
    def short_name(self) -> str:
        """The machine in a few characters, for table rows and tabs (the display name is the full one):
        its GPU or Apple chip without the vendor ("H200", "M2 Max"), else its cores ("2 核 CPU")."""
        if self.gpu:
            name = self.gpu.strip()
            for vendor in ("NVIDIA ", "Apple ", "AMD ", "Intel "):
                name = name.removeprefix(vendor)
            return name.removeprefix("GeForce ").strip() or self.gpu.strip()
        return f"{self.cores} 核 CPU" if self.cores else "CPU"

    def role_short(self, role: str, name: str | None = None) -> str:
        """A short tab or row name for one role: "H200 · GPU", "H200 · CPU"; a machine without a GPU has one role."""
        name = name or self.short_name
        if role == "cpu" and not self.has_gpu:
            return name
        return f"{name} · {'GPU' if role == 'gpu' else 'CPU'}"

    def regenerate_steps(self, only: list[str] | None = None, roles: list[str] | None = None) -> list[tuple[str, str]]:
        """(where, command) for each step that re-runs (some of) this platform's experiments: where is
        "builder" (any Linux x86_64 machine with cargo and network) or "machine" (this platform's machine)."""
        sel = (" --only " + " ".join(only) if only else "") + (" --device " + " ".join(roles) if roles else "")
        if self.route == "bundle":
            env = " ".join(f"{k}={v}" for k, v in sorted(self.bundle.get("env", {}).items()))
            args = " ".join(self.bundle.get("args", []))
            build = " ".join(x for x in (env, "python -m capture bundle", args, "--out .device") if x)
            return [("builder", build), ("machine", f"bash .device/run.sh{sel}")]
        if self.route == "yours":
            return [("machine", f"nox -s yours --{sel}" if sel else "nox -s yours")]
        return [("machine", f"nox -s regenerate --{sel}" if sel else "nox -s regenerate")]

    def regenerate_command(self, only: list[str] | None = None, roles: list[str] | None = None) -> str:
        """The command that re-runs (some of) this platform's experiments, on that machine (English, for logs)."""
        steps = self.regenerate_steps(only, roles)
        if len(steps) == 2:
            return f"{steps[0][1]}  (on a machine with cargo), then on {self.display_name}: {steps[1][1]}"
        return steps[0][1]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, ensure_ascii=False, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> "Identity":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


def path(store_root: Path, key: str) -> Path:
    return store_root / check_platform_key(key) / FILE


class IdentityError(ValueError):
    """A platform.json that cannot be used; the message names the file and what to do."""


def read(store_root: Path, key: str) -> Identity | None:
    p = path(store_root, key)
    if not (p.exists() or p.is_symlink()):
        return None
    try:
        if p.is_symlink():  # a control file is never followed out of the store (capture/storage/paths.py rules)
            raise OSError(f"it is a symlink (to {os.readlink(p)}), not a file")
        data = json.loads(regular.read_text(p))
        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not an object")
        ident = Identity.from_dict(data)
        if not isinstance(ident.roles, dict) or not isinstance(ident.key, str):
            raise TypeError("'roles' must be an object and 'key' a string")
        return ident
    except (OSError, ValueError, TypeError, RecursionError) as e:
        raise IdentityError(f"{p}: not a valid platform identity ({type(e).__name__}: {e}); "
                            f"`git checkout -- {p.name}` in that folder restores the committed one, or "
                            "regenerate on that machine rewrites it") from None


def write(store_root: Path, ident: Identity) -> bool:
    """Write the identity if it changed; True when the file was (re)written."""
    from capture.storage.store import atomic_write

    p = path(store_root, ident.key)
    text = ident.to_json()
    if p.is_file() and not p.is_symlink() and regular.read_bytes(p) == text.encode("utf-8"):
        return False
    atomic_write(p, text)
    return True


def from_metadata(key: str, metas: list[dict]) -> Identity:
    """An identity rebuilt from the metadata that every fragment of the platform carries."""
    machine = next((m["machine"] for m in metas if isinstance(m.get("machine"), dict)), {})
    roles: dict[str, dict[str, str]] = {}
    route = "regenerate"
    feats: set[str] = set()
    for m in metas:
        if m.get("role") and m.get("framework") and m.get("device"):
            roles.setdefault(m["role"], {})[m["framework"]] = m["device"]
        build = (m.get("versions") or {}).get("rust_build") or {}
        if build.get("prebuilt"):
            route = "bundle"
            feats |= set(build.get("features") or [])
    gpu = machine.get("gpu")
    os_name = "macos" if str(machine.get("os", "")).startswith("Darwin") else "linux"
    # stores written before machine records carried "arch": the detected keys name it second
    arch = machine.get("arch") or (key.split("-")[1] if key.count("-") >= 1 else "")
    return Identity(
        key=key,
        display_name=display_name(os_name, arch, gpu, machine.get("cores")),
        os=os_name,
        arch=arch,
        os_pretty=machine.get("os_pretty", ""),
        cpu=machine.get("cpu", ""),
        cores=machine.get("cores"),
        memory_gib=machine.get("memory_gib"),
        gpu=gpu,
        gpu_vendor=("apple" if os_name == "macos" else "nvidia") if gpu else None,
        gpu_driver=machine.get("gpu_driver"),
        roles=roles,
        route=route,
        bundle=bundle_recipe(sorted(feats)) if route == "bundle" else {},
        fingerprint=fpmod.of_machine({**machine, "arch": arch}) if machine else None,
    )


def of_machine(p, machine: dict | None = None, prebuilt: dict | None = None) -> Identity:
    """This machine's identity: what was detected (capture.machines.platform.Platform) and the role mapping.

    `prebuilt`: build-info of binaries built elsewhere (route "bundle"); their GPU devices win.
    """
    from capture.machines.roles import resolve

    m = machine or {}
    gpu_devices = (prebuilt or {}).get("gpu_devices") if prebuilt else None
    roles = {"cpu": {fw: resolve(p, fw, "cpu").device for fw in ("torch", "burn", "candle")}}
    if p.has_gpu:
        roles["gpu"] = {fw: d for fw in ("torch", "burn", "candle") if (d := resolve(p, fw, "gpu", gpu_devices).device)}
    return Identity(
        key=p.key,
        display_name=display_name(p.os, p.arch, p.gpu_name, m.get("cores")),
        os=p.os,
        arch=p.arch,
        os_pretty=m.get("os_pretty", ""),
        cpu=m.get("cpu", ""),
        cores=m.get("cores"),
        memory_gib=m.get("memory_gib"),
        gpu=p.gpu_name,
        gpu_vendor=p.gpu,
        gpu_driver=p.gpu_driver,
        roles=roles,
        route="bundle" if prebuilt is not None else "regenerate",
        bundle=bundle_recipe((prebuilt or {}).get("features", [])) if prebuilt is not None else {},
        fingerprint=fpmod.of_machine(m) if m else None,
    )


def bundle_recipe(features: list[str]) -> dict:
    """How `python -m capture bundle` was asked to build the given features (for the re-run command).

    burn's GPU role is cuda unless BOOK_BURN_GPU=vulkan built it for Vulkan only; a burn build with
    both has cuda as the role and vulkan as a variant (capture/machines/roles.py), which the default gives.
    """
    by_crate: dict[str, set[str]] = {}
    for f in features:
        crate, _, feature = f.partition("/")
        by_crate.setdefault(crate, set()).add(feature)
    candle = by_crate.pop("design-bench", set())
    burn = set().union(*by_crate.values())
    env = {"BOOK_BURN_GPU": "vulkan"} if "vulkan" in burn and "cuda" not in burn else {}
    return {"env": env, "args": ["--candle-cuda"] if "cuda" in candle else []}


def planned(key: str) -> Identity:
    """A machine nobody has captured on yet, as far as its key tells (status --platform): its system, its
    GPU maker and so the devices each role maps to. What only the machine itself can say (cores, driver,
    fingerprint) stays empty until its first regenerate writes platform.json."""
    from capture.machines.roles import CPU_DEVICE, GPU_DEVICE

    key = check_platform_key(key, "--platform")
    os_name, arch, rest = (key.split("-", 2) + ["", ""])[:3]
    gpu = "apple" if os_name == "macos" and arch == "arm64" else "nvidia" if rest.startswith("nvidia-") else None
    words = rest.split("-")
    gpu_name = (" ".join(w.capitalize() if w.isalpha() else w.upper() for w in words) if gpu == "apple" else
                "NVIDIA " + " ".join(w.upper() for w in words[1:]) if gpu == "nvidia" else None)
    roles = {"cpu": dict(CPU_DEVICE)}
    if gpu:
        roles["gpu"] = dict(GPU_DEVICE[gpu])
    return Identity(key=key, display_name=display_name(os_name, arch, gpu_name), os=os_name, arch=arch,
                    gpu=gpu_name, gpu_vendor=gpu, roles=roles)
