"""What `lint` reports: the Finding model and the rule registry (code, title, severity, fix,
and the long text `explain` prints).

Codes are stable: a rule keeps its code for life and a retired code is never reused.
``TS0xx`` are about the input itself, ``TS1xx`` about pools, schematics and GPUs,
``TS12x`` kernel modules, ``TS13x`` rendered manifests, ``TS14x`` add-ons, ``TS15x``
extension names, ``TS18x`` values against the chart they are for.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["RULES", "SEVERITIES", "Collector", "Finding", "Rule", "Severity", "rule"]

Severity = Literal["error", "warning", "note"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "note")


class Rule(BaseModel):
    """One lint rule: what it checks and how to read and fix what it finds."""

    model_config = ConfigDict(frozen=True)

    code: str
    title: str
    severity: Severity
    fix: str
    seen: str  # what the user sees
    why: str
    confirm: str
    remedy: str

    def explain(self) -> str:
        """The long text of `talos-schematic explain CODE`."""
        return (
            f"{self.code} ({self.severity}): {self.title}\n\n"
            f"What you see\n{_indent(self.seen)}\n\n"
            f"Why it happens\n{_indent(self.why)}\n\n"
            f"How to confirm it\n{_indent(self.confirm)}\n\n"
            f"How to fix it\n{_indent(self.remedy)}\n"
        )


class Finding(BaseModel):
    """One problem found in one place of the input."""

    model_config = ConfigDict(frozen=True)

    code: str
    severity: Severity
    message: str
    fix: str
    file: str
    line: int | None = None
    object: str = ""  # the pool or object it concerns, e.g. "tenant-a-gpu"

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line or 0, self.code, self.message)


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.strip().splitlines())


_REBOOT_CONFIRM = """\
Attach to the serial console and stay attached across the reboot:
`virtctl console <vm>` (KubeVirt) shows `ext-nvidia-persistenced` waiting and
`startAllServices` failing shortly before the node reboots.
Every pod of the node restarts at once, so they all carry the same restart count:
`kubectl get pods -A -o wide --field-selector spec.nodeName=<node>`.
Host memory near 96% before the reboot is page cache, not OOM:
`min_over_time(node_memory_MemAvailable_bytes[30h])` stays well above zero.
Several nodes rebooting at the same uptime point to a timer, not to load."""

_NO_DEVICES_CONFIRM = """\
Talos has no shell; run the binary directly from a privileged pod with the host mounted:
`chroot /host /usr/local/bin/nvidia-smi -L` prints `No devices found` although
`/dev/nvidia0` exists and no log line reports an error."""


def _rules() -> tuple[Rule, ...]:
    return (
        Rule(
            code="TS001",
            title="schematic ID not resolved",
            severity="warning",
            fix="put the schematic file next to the manifests, or pass --factory URL",
            seen="The schematic rules did not run for this pool: lint cannot tell which "
            "extensions the ID carries.",
            why="A schematic ID is a SHA-256 of the schematic body; the body cannot be "
            "recovered from the ID. lint knows the bodies of schematic files under the given "
            "paths, of a packaged table of well-known IDs, and, with --factory, what the "
            "factory stores. It never guesses.",
            confirm="`curl https://factory.talos.dev/schematics/<id>` prints the body the "
            "factory stores for the ID (404 if it has none).",
            remedy="Keep the schematic YAML in the repository (any file under the linted "
            "paths), or run `talos-schematic lint --factory https://factory.talos.dev PATH`.",
        ),
        Rule(
            code="TS002",
            title="file is not valid YAML",
            severity="error",
            fix="fix the YAML syntax at the reported line",
            seen="Nothing in this file was checked.",
            why="The file does not parse as YAML (or JSON), or go-yaml's safety rules refuse "
            "it (excessive aliasing, nesting too deep); Kubernetes and Helm would refuse it too. "
            "A file larger than the input limit (16 MiB, --max-input-size) or not UTF-8 text is "
            "not read at all. The other files are still linted.",
            confirm="`python -c 'import sys, yaml; list(yaml.safe_load_all(open(sys.argv[1])))' "
            "FILE` shows the same error.",
            remedy="Fix the syntax at the reported line.",
        ),
        Rule(
            code="TS003",
            title="check skipped: Talos version unknown, or a Helm template",
            severity="note",
            fix="set talos.version (or osImage.*.version), or pass --talos VERSION",
            seen="Some rules did not run for this object.",
            why="Which extension names exist and which NVIDIA driver a tier carries depend on "
            "the Talos release. When the object does not say which release it runs, those "
            "checks are skipped rather than guessed. Files holding Helm template directives "
            "(`{{ ... }}`) are not YAML until rendered and are skipped.",
            confirm="Look for `talos.version`, `osImage.factory.version` or "
            "`osImage.builtin.version` in the object.",
            remedy="Write the Talos version into the object, or pass `--talos v1.13.6` to "
            "lint. Lint rendered manifests (`helm template`) instead of chart templates.",
        ),
        Rule(
            code="TS004",
            title="schematic file the Image Factory would reject",
            severity="error",
            fix="fix the schematic at the reported line (talos-schematic id FILE explains)",
            seen="`POST /schematics` answers 400, so no image can be built from the file.",
            why="The factory decodes schematics strictly: unknown keys, duplicate keys, wrong "
            "types and a few YAML subtleties are refused.",
            confirm="`talos-schematic id FILE` prints the factory's objection offline.",
            remedy="Fix the field named in the message.",
        ),
        Rule(
            code="TS101",
            title="NVIDIA extensions on a pool without an NVIDIA GPU",
            severity="error",
            fix="give this pool a schematic without NVIDIA extensions (e.g. ce4c9805…7515)",
            seen="Nodes of the pool report Ready but reboot about every 70 minutes, forever "
            "(rolling back if they were just upgraded). Every pod of such a node restarts at "
            "once.",
            why="The NVIDIA container toolkit extension starts `ext-nvidia-persistenced` (and "
            "`ext-nvidia-cdi-gen` from Talos 1.13), which wait for a GPU that does not exist. "
            "Talos's `startAllServices` times out and the machine reboots.",
            confirm=_REBOOT_CONFIRM,
            remedy="Set the NVIDIA schematic only on the pools that hold an `nvidia.com/*` GPU; "
            "give every other pool a schematic without NVIDIA extensions, such as Cozystack's "
            "default ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515 "
            "(qemu-guest-agent only).",
        ),
        Rule(
            code="TS102",
            title="cluster-wide NVIDIA schematic in a cluster with non-GPU pools",
            severity="error",
            fix="move the NVIDIA schematic from talos.schematicID to the GPU pools only",
            seen="The non-GPU pools of the cluster reboot about every 70 minutes while "
            "reporting Ready; the GPU pools work.",
            why="The cluster-wide `talos.schematicID` of the Kubernetes app is the image of "
            "every node group that does not set its own. Non-GPU nodes booted from an NVIDIA "
            "schematic fail `startAllServices` waiting for the NVIDIA services (see TS101).",
            confirm=_REBOOT_CONFIRM,
            remedy="Keep the cluster-wide schematic free of NVIDIA extensions and set the "
            "NVIDIA schematic per pool (`talos.schematicID`, `schematicID` or "
            "`osImage.factory.schematicID` of the GPU KubernetesNodes).",
        ),
        Rule(
            code="TS103",
            title="GPU needs the other kernel-module flavour",
            severity="error",
            fix="use siderolabs/nvidia-open-gpu-kernel-modules-<tier> for this GPU",
            seen="`nvidia-smi -L` prints `No devices found`; `/dev/nvidia0` exists and nothing "
            "logs an error.",
            why="Blackwell GPUs and the Grace superchip GPUs (GH200, GB200, GB300) are driven "
            "only by the open kernel modules; the proprietary modules load and find no device. "
            "GB10 (DGX Spark) is the Talos exception: from Talos 1.13 it works only with the "
            "proprietary modules and kernel argument `arm64.nobti`.",
            confirm=_NO_DEVICES_CONFIRM,
            remedy="Replace `nonfree-kmod-nvidia-<tier>` with "
            "`nvidia-open-gpu-kernel-modules-<tier>` (same tier as the toolkit); "
            "`talos-schematic gpu <id>` prints the right set.",
        ),
        Rule(
            code="TS104",
            title="pre-Turing GPU with the open kernel modules",
            severity="error",
            fix="use siderolabs/nonfree-kmod-nvidia-lts for Maxwell, Pascal and Volta",
            seen="`nvidia-smi -L` prints `No devices found`; the open modules load without "
            "complaint.",
            why="Maxwell, Pascal and Volta GPUs (device IDs 0x1340-0x1DFF) have no GSP; the open "
            "kernel modules drive only Turing and newer.",
            confirm=_NO_DEVICES_CONFIRM,
            remedy="Use the proprietary modules `nonfree-kmod-nvidia-lts` with "
            "`nvidia-container-toolkit-lts`.",
        ),
        Rule(
            code="TS105",
            title="pre-Turing GPU on a driver that dropped it",
            severity="error",
            fix="use the lts tier (driver 580) for Maxwell, Pascal and Volta",
            seen="The module loads but `nvidia-smi -L` finds no device, or the kernel log says "
            "the GPU is not supported by this driver.",
            why="NVIDIA drivers after the 580 branch dropped Maxwell, Pascal and Volta. On "
            "Talos 1.13 and newer only `nonfree-kmod-nvidia-lts` (580) drives them.",
            confirm=_NO_DEVICES_CONFIRM,
            remedy="Switch both the kernel modules and the toolkit to the lts tier; "
            "`talos-schematic gpu <id> --talos <version>` shows the driver of each tier.",
        ),
        Rule(
            code="TS106",
            title="GPU newer than the tier's driver",
            severity="error",
            fix="use the tier (or Talos release) whose driver knows this GPU",
            seen="`nvidia-smi -L` prints `No devices found`; the kernel log may mention an "
            "unsupported device.",
            why="A driver branch drives only the devices it knows. Blackwell and Grace parts "
            "need at least the first driver that lists them, e.g. RTX PRO 6000 Blackwell "
            "Server (10de:2bb5) needs 575.57.08, so the 570 production driver of Talos "
            "1.10 to 1.12 does not drive it.",
            confirm=_NO_DEVICES_CONFIRM,
            remedy="Pick the other tier if its driver is new enough, or a newer Talos release; "
            "`talos-schematic gpu <id> --talos <version>` decides it.",
        ),
        Rule(
            code="TS110",
            title="GPU pool without NVIDIA kernel modules",
            severity="error",
            fix="add siderolabs/nvidia-open-gpu-kernel-modules-<tier> to the pool's schematic",
            seen="The VM holds the GPU but the node advertises no `nvidia.com/gpu`; the device "
            "plugin or its validator waits forever.",
            why="Without the kernel-module extension the image has no NVIDIA driver; nothing "
            "binds the GPU.",
            confirm="`chroot /host /usr/local/bin/nvidia-smi -L` fails (the binary or driver is "
            "missing); `talosctl get extensions` lists no NVIDIA modules.",
            remedy="Add the kernel modules of the flavour the GPU needs, in the same tier as "
            "the toolkit (`talos-schematic gpu <id>` prints the set).",
        ),
        Rule(
            code="TS111",
            title="GPU pool without the NVIDIA container toolkit",
            severity="error",
            fix="add siderolabs/nvidia-container-toolkit-<tier> (same tier as the modules)",
            seen="Pods requesting a GPU start without CUDA libraries, or the device plugin "
            "never becomes ready.",
            why="The toolkit extension carries the user-space driver, `nvidia-persistenced` and "
            "(from Talos 1.13) the CDI spec generator that hands GPUs to containers.",
            confirm="`chroot /host /usr/local/bin/nvidia-smi -L` is missing; "
            "`talosctl get extensions` lists the modules without the toolkit.",
            remedy="Add `nvidia-container-toolkit-<tier>` of the kernel modules' tier.",
        ),
        Rule(
            code="TS112",
            title="NVIDIA extensions of different tiers",
            severity="error",
            fix="use one tier (lts or production) for the modules, toolkit and fabric manager",
            seen="`nvidia-smi` fails with a driver/library version mismatch, or the "
            "persistence daemon never starts.",
            why="Each tier pins one driver version (e.g. on Talos 1.12 lts is 580 and "
            "production 570); the user-space libraries of the toolkit must match the kernel "
            "modules exactly.",
            confirm="`chroot /host /usr/local/bin/nvidia-smi` prints `Failed to initialize "
            "NVML: Driver/library version mismatch`.",
            remedy="Make every NVIDIA extension end in the same `-lts` or `-production` "
            "suffix (unsuffixed names only exist before Talos 1.8).",
        ),
        Rule(
            code="TS113",
            title="both NVIDIA kernel-module flavours",
            severity="error",
            fix="keep exactly one of the open or proprietary kernel-module extensions",
            seen="The image build fails, or one module set shadows the other and the GPU is "
            "not found.",
            why="The open and the proprietary modules provide the same kernel modules; exactly "
            "one flavour may be installed.",
            confirm="`talosctl get extensions` lists both `nvidia-open-gpu-kernel-modules` and "
            "`nonfree-kmod-nvidia`.",
            remedy="Keep the flavour the GPU needs (open for Turing and newer, proprietary for "
            "Maxwell to Volta).",
        ),
        Rule(
            code="TS114",
            title="GPU resource name not in the device table",
            severity="note",
            fix="use the resource name KubeVirt advertises (talos-schematic gpu <id>)",
            seen="The GPU-generation rules did not run for this GPU.",
            why="KubeVirt resource names are built from the pci.ids device name; lint maps "
            "them back to devices to learn the architecture. This name matches no device.",
            confirm="`kubectl get node <host> -o jsonpath='{.status.allocatable}'` lists the "
            "names KubeVirt advertises.",
            remedy="Use the advertised name; `talos-schematic gpu <pci-id>` prints it.",
        ),
        Rule(
            code="TS120",
            title="kernelModules: null",
            severity="error",
            fix="remove the key (the NVIDIA default) or write a list; [] opts out",
            seen="The chart renders no kernel modules, or fails, depending on the chart "
            "version; GPUs are not usable.",
            why="`kernelModules` has three states: unset (the chart loads nvidia, nvidia_uvm, "
            "nvidia_drm, nvidia_modeset on NVIDIA pools), a list (replaces that set) and `[]` "
            "(opts out). `null` is none of them.",
            confirm="`helm template` the chart with these values and look for `kernel:` in the "
            "machine config.",
            remedy="Delete the key to get the NVIDIA default, or write the list you want.",
        ),
        Rule(
            code="TS121",
            title="kernelModules: [] on an NVIDIA pool",
            severity="warning",
            fix="remove kernelModules: [] unless the modules are loaded another way",
            seen="The GPU is attached and the extensions are installed, yet the node "
            "advertises no GPU; nothing logs an error.",
            why="The NVIDIA extensions install kernel modules but do not load them (they "
            "blacklist auto-load); `[]` turns off the chart's loading of nvidia, nvidia_uvm, "
            "nvidia_drm and nvidia_modeset.",
            confirm="`talosctl read /proc/modules | grep nvidia` prints nothing.",
            remedy="Remove `kernelModules: []` (the default loads the four modules), or list "
            "them explicitly.",
        ),
        Rule(
            code="TS122",
            title="NVIDIA kernel modules loaded from a schematic without them",
            severity="error",
            fix="remove the NVIDIA modules, or give the pool a schematic with NVIDIA modules",
            seen="Machine config application fails on the nodes (module not found) and the "
            "node may not finish booting.",
            why="The machine config asks Talos to load `nvidia*` modules that only the NVIDIA "
            "kernel-module extension provides; this pool's image does not carry it.",
            confirm="`virtctl console <vm>` shows the module load failing during boot.",
            remedy="Drop the NVIDIA entries from `kernelModules` / `machine.kernel.modules`, or "
            "use a schematic with NVIDIA kernel modules on a pool with an NVIDIA GPU.",
        ),
        Rule(
            code="TS123",
            title="GPU machine config loads no NVIDIA modules",
            severity="warning",
            fix="load nvidia, nvidia_uvm, nvidia_drm, nvidia_modeset in the machine config",
            seen="The extensions are installed but no GPU is advertised; nothing logs an error.",
            why="The NVIDIA extensions do not load their modules; the machine config must "
            "(`machine.kernel.modules`, or KernelModuleConfig documents from Talos 1.14).",
            confirm="`talosctl read /proc/modules | grep nvidia` prints nothing.",
            remedy="Load `nvidia`, `nvidia_uvm`, `nvidia_drm` and `nvidia_modeset`, in that "
            "order. Which way depends on the chart: from Cozystack PR #3571 (and PR #4171's "
            "osImage chart) leaving `kernelModules` unset loads them on a pool with an "
            "`nvidia.com/*` GPU, or list them; released Cozystack v1.6.x and main have no "
            "`kernelModules` and their talos-reconcile Job rewrites the TalosConfigTemplate "
            "from a fixed template, so there is no durable way there: move to a chart with "
            "`kernelModules`. Outside Cozystack, add them to the machine config "
            "(`machine.kernel.modules`, or KernelModuleConfig documents from Talos 1.14). "
            "`lint --chart TARGET` says which applies.",
        ),
        Rule(
            code="TS124",
            title="NVIDIA machine config on Talos 1.12 or older without the BPF sysctl",
            severity="warning",
            fix="set machine.sysctls net.core.bpf_jit_harden: 1",
            seen="On Talos 1.12 and older, GPU containers can fail to start although the "
            "driver is loaded on the host.",
            why="Talos's NVIDIA support before 1.13 asks for `net.core.bpf_jit_harden` set to 1 "
            "on GPU nodes; Talos 1.13 uses CDI by default and dropped the need.",
            confirm="`talosctl read /proc/sys/net/core/bpf_jit_harden` prints something other "
            "than 1.",
            remedy='Add `machine.sysctls: {net.core.bpf_jit_harden: "1"}` to the machine '
            "config (the generated machine-config patch does), or upgrade to Talos 1.13.",
        ),
        Rule(
            code="TS125",
            title="machine.install.extensions in a machine config",
            severity="warning",
            fix="remove machine.install.extensions; put the extensions in the schematic",
            seen="The extensions listed in the machine config are not on the node; "
            "`talosctl get extensions` does not show them.",
            why="Since Talos 1.10 `machine.install.extensions` has no effect: system extensions "
            "come only from the boot image and installer, i.e. from the schematic.",
            confirm="`talosctl get extensions` lists only what the schematic holds.",
            remedy="Add the extensions to the pool's schematic (the generator's pool "
            "`extensions`), boot or upgrade to its image, and delete the key.",
        ),
        Rule(
            code="TS130",
            title="boot-disk schematic differs from the installer schematic",
            severity="error",
            fix="use one schematic ID for the disk image URL and machine.install.image",
            seen="New nodes boot with one extension set and change to another on the next "
            "upgrade; a pool works until it is upgraded, or the other way round.",
            why="The worker boots "
            "`<imageFactoryURL>/image/<id>/<version>/openstack-amd64.raw.xz` "
            "(KubevirtMachineTemplate) and upgrades to `<installerRepository>/<id>:<version>` "
            "(TalosConfigTemplate `machine.install.image`). Both must name the same ID.",
            confirm="`talosctl get extensions` differs between a freshly booted node and an "
            "upgraded one of the same pool.",
            remedy="Set one schematic per pool (the chart derives both URLs from it); for "
            "hand-written manifests, write the same ID into both places.",
        ),
        Rule(
            code="TS131",
            title="control-plane Service without port 50001 (trustd)",
            severity="warning",
            fix="expose port 50001 (talos-trustd) on the control-plane Service",
            seen="Workers report Ready but reboot about every 70 minutes, even with a correct "
            "schematic.",
            why="Talos workers get their certificates from trustd on port 50001 of the control "
            "plane endpoint; without it certificate signing fails and the boot sequence times "
            "out. This is the other cause of a 70-minute reboot cycle: rule it out before "
            "blaming the schematic.",
            confirm="`kubectl get svc <cluster> -o yaml` (the control-plane Service) lists no "
            "port 50001. On a worker's serial console (`virtctl console <vm>`, attached across "
            "the reboot) the certificate requests to `<endpoint>:50001` time out and the boot "
            "sequence gives up about 70 minutes in; the node has no kubelet serving "
            "certificate (`talosctl -n <worker> get certificates` shows none issued), while "
            "the NVIDIA services, if any, run. A worker's first boot can also fail this way; "
            "a schematic problem instead shows `ext-nvidia-persistenced` waiting.",
            remedy="Add `{name: talos-trustd, port: 50001, targetPort: 50001}` to the Service "
            "(on Kamaji: `spec.network.additionalServicePorts` of the KamajiControlPlane). "
            "Cozystack's kubernetes chart adds it to the KamajiControlPlane it renders; a "
            "hand-made or older control plane may lack it.",
        ),
        Rule(
            code="TS132",
            title="SecureBoot installer with a non-SecureBoot boot medium (or the reverse)",
            severity="error",
            fix="boot and install the pool from media of one kind: both -secureboot, or neither",
            seen="A node booted from the plain image upgrades into a UKI its firmware may refuse "
            "(SecureBoot on) or boots unsigned (SecureBoot off); a SecureBoot node upgraded with "
            "the plain installer leaves the sd-boot/UKI layout it booted with.",
            why="The factory names SecureBoot media `<platform>-<arch>-secureboot.*` and their "
            "installer `installer-secureboot` (`<platform>-installer-secureboot`); the boot "
            "medium and `machine.install.image` of one pool must be of the same kind.",
            confirm="`talosctl get securitystate` shows whether the node booted with "
            "SecureBoot; compare with the installer in `machine.install.image`.",
            remedy="Set `secureboot.enabled` on the pool (or leave it out) and regenerate: "
            "urls.yaml and the machine-config patch then agree.",
        ),
        Rule(
            code="TS133",
            title="boot media carry another schematic than the installer (boot.schematic)",
            severity="warning",
            fix="keep it only for additions that matter before the first install or upgrade",
            seen="Nodes booted from the disk image (or ISO, PXE) run the boot schematic; after "
            "their first upgrade they run the installer's. This is TS130's divergence, asked "
            "for by `boot.schematic`.",
            why="A pool's boot medium and its installer are built from different schematics "
            "when `boot.schematic` adds kernel arguments, extensions or META values; the "
            "installer (`machine.install.image`) decides what an installed node runs.",
            confirm="`talosctl get extensions` and `/proc/cmdline` differ between a node just "
            "booted and one upgraded.",
            remedy="Put what must stay (extensions) in the pool's own schematic; keep "
            "`boot.schematic` for boot-only arguments such as `talos.config=`.",
        ),
        Rule(
            code="TS134",
            title="board overlay on a platform that cannot use it",
            severity="error",
            fix="boot the overlay's schematic as metal-arm64, or drop the overlay",
            seen="The image builds, but the board firmware and u-boot an overlay brings are "
            "ignored (or the build fails): the node does not boot as the board expects.",
            why="Overlays (sbc-raspberrypi, sbc-rockchip, sbc-jetson, ...) are for arm64 "
            "single-board computers booting the metal image (`metal-arm64.raw.xz`).",
            confirm="The boot URL's `<platform>-<arch>` is not `metal-arm64`.",
            remedy="Use a schematic without `overlay` for VMs and amd64 machines.",
        ),
        Rule(
            code="TS135",
            title="META key the factory refuses",
            severity="error",
            fix="use META keys 0..255, written as whole numbers",
            seen="`POST /schematics` answers 400; no image is built from the schematic.",
            why="The factory stores META keys as one byte (uint8): negative keys, keys above "
            "255, quoted keys and fractions are refused.",
            confirm="`talosctl meta` keys are bytes; `talos-schematic id FILE` shows the error.",
            remedy="Pick a key in 0..255 (0x0a, 10, is Talos's platform network config).",
        ),
        Rule(
            code="TS140",
            title="devicePlugin.env override drops the CDI defaults",
            severity="error",
            fix="restate every CDI default in devicePlugin.env next to your own variables",
            seen="Pods get the GPU device but no CUDA libraries, or the device plugin "
            "advertises nothing; GPUs stop working after the override.",
            why="The add-on merges `valuesOverride` with `mergeOverwrite`, which replaces lists: "
            "an env list with one variable replaces DEVICE_LIST_STRATEGY=cdi-annotations, "
            "DEVICE_ID_STRATEGY=uuid, NVIDIA_DRIVER_ROOT=/, "
            "NVIDIA_CTK_PATH=/usr/local/bin/nvidia-ctk and CDI_ANNOTATION_PREFIX=cdi.k8s.io/.",
            confirm="`kubectl -n cozy-gpu-operator get ds nvidia-device-plugin-daemonset -o "
            "yaml` shows the env without the CDI variables. CDI injection is decided at pod "
            "admission: pods created before the fix must be recreated.",
            remedy="Write the full list: the five defaults plus your variables (with `lint "
            "--cozystack RELEASE`, the list of that release's chart). `talos-schematic generate` "
            "writes it whole in cluster/kubernetes-addons.yaml. Recreate GPU pods afterwards.",
        ),
        Rule(
            code="TS141",
            title="GPU Operator driver or toolkit enabled for Talos workers",
            severity="warning",
            fix="set driver.enabled: false and toolkit.enabled: false",
            seen="Driver or toolkit pods crash-loop on the Talos nodes; GPU pods stay Pending.",
            why="On Talos the driver and toolkit come from system extensions; the operator's "
            "containers try to build or install them on a read-only OS.",
            confirm="`kubectl -n cozy-gpu-operator get pods` shows nvidia-driver-daemonset or "
            "nvidia-container-toolkit-daemonset failing.",
            remedy="Disable `driver` and `toolkit` in the override (Cozystack's defaults do).",
        ),
        Rule(
            code="TS142",
            title="HAMi enabled with Talos GPU pools",
            severity="warning",
            fix="disable addons.hami until it supports CDI on Talos",
            seen="GPU pods are scheduled but get no usable GPU.",
            why="HAMi is not wired for CDI on Talos yet; with HAMi the operator's device plugin "
            "is disabled.",
            confirm="`kubectl describe pod` of a GPU pod shows no CDI annotation.",
            remedy="Set `addons.hami.enabled: false` and use the GPU Operator's device plugin. "
            "`talos-schematic generate` refuses addons.hami.enabled on Talos GPU pools unless "
            "addons.hami.force is set, and never writes HAMi beside the operator's device plugin.",
        ),
        Rule(
            code="TS143",
            title="pool GPU not permitted by the management cluster (KubeVirt passthrough)",
            severity="error",
            fix="add the GPU to gpu.permittedHostDevices.pciHostDevices in the platform values "
            "(talos-schematic generate writes management/platform-gpu-values.yaml)",
            seen="The pool's VMs never start: KubeVirt's admission refuses a VM whose GPU "
            "resource is not in permittedHostDevices, and the pool stays at zero nodes.",
            why="Cozystack's platform chart permits its default list of datacenter GPUs (unless "
            "gpu.replaceDefaults: true) plus the gpu.permittedHostDevices.pciHostDevices of "
            "its values. A GPU outside both, such as the RTX PRO 6000 Blackwell Server "
            "(10DE:2BB5), is not passed through.",
            confirm="`kubectl get kubevirt -A -o yaml` on the management cluster: "
            "spec.configuration.permittedHostDevices.pciHostDevices lacks the resource name; "
            "the VM's events say the host device is not permitted.",
            remedy="Under spec.components.platform.values of the cozystack-platform Package, add "
            "{pciVendorSelector: '10DE:<device>', resourceName: <the pool's gpus[] name>, "
            "externalResourceProvider: true} to gpu.permittedHostDevices.pciHostDevices, "
            "keeping any entries already there (a list is replaced, not merged). `talos-schematic "
            "generate` writes the entries for a cluster file's pools.",
        ),
        Rule(
            code="TS150",
            title="extension not offered by the Talos version",
            severity="error",
            fix="use an extension name that Talos release offers",
            seen="The factory accepts the schematic, but image builds fail with `official "
            'extension "X" is not available for Talos version vY`: nodes cannot be created '
            "or upgraded.",
            why="The factory checks extension names only when it builds an image, against the "
            "chosen Talos release (e.g. tiered NVIDIA names exist from 1.8).",
            confirm="`talos-schematic extensions --talos <version>` lists what the release offers.",
            remedy="Fix the spelling or pick the name the release offers.",
        ),
        Rule(
            code="TS151",
            title="extensions not in the web UI's sorted order",
            severity="note",
            fix="sort the extension list to get the same ID the factory UI gives",
            seen="The same extension set has two schematic IDs in the cluster; the UI shows a "
            "different ID than the one in use.",
            why="Lists are not sorted before hashing; the factory UI sorts extensions, the API "
            "does not. Same set, different order, different ID.",
            confirm="`talos-schematic id FILE` on the sorted and unsorted bodies prints "
            "different IDs.",
            remedy="Sort `officialExtensions` (plain byte order) and use the new ID.",
        ),
        Rule(
            code="TS155",
            title="fabric manager on NVLink-5 (Blackwell HGX) without ib_umad",
            severity="error",
            fix="load kernel module ib_umad next to the NVIDIA modules",
            seen="GPUs show in `nvidia-smi`, but every CUDA call answers "
            "CUDA_ERROR_SYSTEM_NOT_READY; the fabric manager service exits with "
            "NV_WARN_NOTHING_TO_DO.",
            why="On Blackwell HGX baseboards and newer (NVLink 5) the NVSwitches are not PCI "
            "functions of the host: they are managed through the baseboard's ConnectX-7 bridge "
            "over InfiniBand. The fabric manager extension runs NVIDIA's NVLink subnet manager "
            "(NVLSM) beside the fabric manager, on the bridge's management port (the function "
            "whose VPD says SMDL=SW_MNG). NVLSM talks to that port through `/dev/infiniband/"
            "umad*`, which only kernel module `ib_umad` provides, and Talos loads no module "
            "unless the machine config asks. Without NVLSM the fabric is never trained, so the "
            "GPUs never become ready. Hopper and older HGX boards (NVSwitches as 10de PCI "
            "functions) do not need it.",
            confirm="`talosctl logs ext-nvidia-fabricmanager` says that no InfiniBand NVSwitch "
            "was detected and that ib_umad should be loaded, then shows the fabric manager "
            "failing with NV_WARN_NOTHING_TO_DO. `talosctl read /proc/modules | grep ib_umad` "
            "prints nothing.",
            remedy="Add `ib_umad` to the machine config's kernel modules "
            "(`machine.kernel.modules`, or a KernelModuleConfig document from Talos 1.14) and "
            "reboot or restart the service; `talos-schematic generate` does it for a metal pool "
            "whose profile has NVLink-5 GPUs and `nvswitch: true` (e.g. `metal-hgx-b200-8x`). "
            "lint knows the hardware of a machine config only from `--hardware PROFILE`.",
        ),
        Rule(
            code="TS156",
            title="plain ghcr.io/siderolabs/installer on Talos 1.14 or newer",
            severity="error",
            fix="install from factory.talos.dev/<platform>-installer/<schematic ID>:<version>",
            seen="Installation or `talosctl upgrade` fails pulling the installer image: the "
            "registry has no such tag.",
            why="From Talos 1.14 the plain installer image is no longer published; Talos "
            "itself defaults to the Image Factory's `metal-installer` with the empty schematic "
            "(`376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba`, vanilla "
            "Talos). A config written for 1.13 and bumped to 1.14 keeps the old reference.",
            confirm="`crane manifest ghcr.io/siderolabs/installer:<version>` (or `docker "
            "manifest inspect`) answers that the tag is unknown.",
            remedy="Use `factory.talos.dev/<platform>-installer/<id>:<version>` for the "
            "platform the node booted (`metal-installer` on bare metal, `openstack-installer` "
            "for a KubeVirt worker: a platform's installer writes that platform's kernel "
            "arguments), with the pool's schematic ID (the generated machine-config patch "
            "does), or the empty schematic's ID for vanilla Talos.",
        ),
        Rule(
            code="TS180",
            title="osImage version differs from talos.version",
            severity="warning",
            fix="set osImage.factory.version (or image.*.version) and talos.version alike",
            seen="The pool boots one Talos release while its values (and everything that reads "
            "`talos.version`) name another; on a chart without the image union the pool "
            "boots `talos.version` instead.",
            why="The image union's `version` overrides `talos.version` for this pool's boot "
            "disk and installer on the charts that have it (Cozystack PR #4171 for "
            "KubernetesNodes, PR #3294 for node groups); charts without the union ignore it "
            "and use `talos.version`. Two releases in one pool's values means the release it "
            "runs depends on which chart reads them.",
            confirm="`talosctl -n <worker> version` prints the Talos release the node runs; "
            "compare it with both keys.",
            remedy="Write one release in both places (the generator writes the cluster file's "
            "`talos.version` into both), or remove the override.",
        ),
        Rule(
            code="TS181",
            title="value the chart ignores",
            severity="error",
            fix="remove the key, or target a chart that has it",
            seen="The values validate and the object is accepted, but the setting has no "
            "effect; for `osImage` or a root `schematicID` the pool boots Cozystack's default "
            "schematic, and GPU pools come up without a driver.",
            why="No kubernetes-nodes chart sets `additionalProperties: false`, so a key written "
            "for another chart generation (PR #4171's `osImage`, PR #3571's `schematicID` and "
            "`kernelModules`, PR #3797's `talos.imageFactoryCA`) is silently ignored by a chart "
            "that lacks it. Reported only when `lint --chart TARGET` says which chart the "
            "values are for.",
            confirm="`helm template` the chart with these values and look for the setting in "
            "the rendered objects: it is not there.",
            remedy="Write the values for the chart you run (`talos-schematic generate --chart "
            "TARGET`), or upgrade the chart.",
        ),
        Rule(
            code="TS190",
            title="file skipped: a dangling symbolic link, or not a regular file",
            severity="warning",
            fix="remove the broken link, or point it at the file it should name",
            seen="Nothing in this entry was checked; the rest of the directory was.",
            why="Below a directory, lint reads `*.yaml`, `*.yml` and `*.json` files. A symbolic "
            "link whose target is gone cannot be read, and a FIFO, socket or device with such "
            "a name would block or never end; both are skipped rather than ending the run. A "
            "FIFO named on the command line (`lint <(helm template ...)`) is read as usual.",
            confirm="`ls -l PATH` shows the link and its missing target, or the file type "
            "(`p` for a FIFO).",
            remedy="Delete the link or restore its target; keep pipes and devices out of the "
            "linted tree.",
        ),
    )


RULES: dict[str, Rule] = {r.code: r for r in _rules()}


def rule(code: str) -> Rule:
    """The rule with this code (KeyError for an unknown code)."""
    return RULES[code]


class Collector:
    """Gathers findings, once per (code, file, line, object, message)."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str, int | None, str, str], Finding] = {}
        self._once: set[str] = set()

    def add(
        self,
        code: str,
        message: str,
        file: str,
        line: int | None = None,
        obj: str = "",
        *,
        fix: str | None = None,
    ) -> None:
        """Record a finding; ``fix`` replaces the rule's one-line fix (e.g. per chart)."""
        known = RULES[code]
        key = (code, file, line, obj, message)
        self._found.setdefault(
            key,
            Finding(
                code=code,
                severity=known.severity,
                message=message,
                fix=fix or known.fix,
                file=file,
                line=line,
                object=obj,
            ),
        )

    def first(self, key: str) -> bool:
        """True the first time ``key`` is seen: for findings made once per schematic ID."""
        if key in self._once:
            return False
        self._once.add(key)
        return True

    @property
    def findings(self) -> list[Finding]:
        return sorted(self._found.values(), key=lambda f: f.sort_key)
