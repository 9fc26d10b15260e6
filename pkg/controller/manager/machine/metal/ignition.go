package metal

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	ignition "github.com/flatcar/ignition/config/v2_4/types"
	"k8s.io/utils/ptr"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/ruleset"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
)

// IgnitionVersion is the Ignition spec of the userdata: metal-stack's
// installer parses the userdata with flatcar/ignition's config/v2_4 and runs
// that version's ignition binary, which take specs up to 2.4.0 only
// (os-installer pkg/installer/os/common/process_userdata.go).
const IgnitionVersion = "2.4.0"

// MaxUserdataBytes bounds the userdata as the metal-api carries it (base64):
// metal-stack's v2 API refuses more than 32 KiB (api machine.proto,
// MachineAllocation.userdata).
const MaxUserdataBytes = 32 << 10

// Setup is what the userdata needs to know of the machine besides its files.
type Setup struct {
	// DefaultRouteVRF is the VRF device of the network that holds the
	// machine's default route (e.g. vrf104009); the agent runs in it. Empty:
	// the agent runs in the default VRF.
	DefaultRouteVRF string
	// Release, when set, is downloaded onto the machine by the userdata, for
	// a firewall image without the agent.
	Release *Release
}

// Release is an agent release to download onto the machine.
type Release struct {
	Version string
	// URL is the binary's https or http URL; its signature is at URL + ".sig".
	URL string
	// SHA256 is what the operator's signature covers; SHA512 is what
	// Ignition checks the download against (the only hash Ignition 2.x knows).
	SHA256, SHA512 string
}

// Userdata renders the Ignition config (spec 2.4.0) a metal-stack firewall
// installs: the files (data URLs on the root file system), the agent's
// units, and drop-ins that make the network wait for the boot step and keep
// firewall-controller and the droptailer from starting. With a release, the
// binary, its signature and what the signature covers are downloaded to
// ReleaseDir and the install unit checks and installs them; that needs the
// operator's release key among the files.
func Userdata(files []machine.File, setup Setup) ([]byte, error) {
	cfg := ignition.Config{Ignition: ignition.Ignition{Version: IgnitionVersion}}
	for _, f := range files {
		cfg.Storage.Files = append(cfg.Storage.Files, dataFile(f.Path, f.Content, int(f.Mode.Perm())))
	}
	// No secret: readable as the image's own rules are.
	cfg.Storage.Files = append(cfg.Storage.Files, dataFile(ClosedTablePath, []byte(ruleset.Render(ruleset.Closed())), 0o644))
	cfg.Systemd.Units = []ignition.Unit{
		{Name: agentconfigv1alpha1.BootUnit, Enabled: ptr.To(true), Contents: bootUnit},
		{Name: agentconfigv1alpha1.AgentUnit, Enabled: ptr.To(true), Contents: agentUnit(setup.DefaultRouteVRF)},
		{Name: networkdUnit, Dropins: []ignition.SystemdDropin{{Name: dropInName, Contents: requiresBoot}}},
		{Name: frrUnit, Dropins: []ignition.SystemdDropin{{Name: dropInName, Contents: requiresBoot}}},
		{Name: firewallControllerUnit, Dropins: []ignition.SystemdDropin{{Name: dropInName, Contents: notWithAgent}}},
		{Name: droptailerUnit, Dropins: []ignition.SystemdDropin{{Name: dropInName, Contents: notWithAgent}}},
	}
	if r := setup.Release; r != nil {
		if !hasFile(files, agentconfigv1alpha1.UpdatePublicKeyPath) {
			return nil, errors.New("the agent release can be installed through the userdata only with the operator's release key (the extension's --agent-update-public-key)")
		}
		cfg.Storage.Files = append(cfg.Storage.Files,
			ignition.File{
				Node: ignition.Node{Filesystem: "root", Path: releaseFile(releaseBinary), Overwrite: ptr.To(true)},
				FileEmbedded1: ignition.FileEmbedded1{
					Contents: ignition.FileContents{Source: r.URL, Verification: ignition.Verification{Hash: ptr.To("sha512-" + r.SHA512)}},
					Mode:     ptr.To(0o600),
				},
			},
			ignition.File{
				Node:          ignition.Node{Filesystem: "root", Path: releaseFile(releaseSignature), Overwrite: ptr.To(true)},
				FileEmbedded1: ignition.FileEmbedded1{Contents: ignition.FileContents{Source: r.URL + ".sig"}, Mode: ptr.To(0o600)},
			},
			dataFile(releaseFile(releaseMessage), selfupdate.SignedMessage(r.Version, r.SHA256), 0o600),
			dataFile(releaseFile(releaseSHA256), fmt.Appendf(nil, "%s  %s\n", r.SHA256, releaseFile(releaseBinary)), 0o600),
		)
		cfg.Systemd.Units = append(cfg.Systemd.Units, ignition.Unit{Name: agentconfigv1alpha1.InstallUnit, Enabled: ptr.To(true), Contents: installUnit})
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if n := base64.StdEncoding.EncodedLen(len(out)); n > MaxUserdataBytes {
		return nil, fmt.Errorf("the userdata is %d bytes in base64, more than the metal-api's %d", n, MaxUserdataBytes)
	}
	return out, nil
}

// dataFile is a file on the root file system with its content inline.
func dataFile(path string, content []byte, mode int) ignition.File {
	return ignition.File{
		Node: ignition.Node{Filesystem: "root", Path: path, Overwrite: ptr.To(true)},
		FileEmbedded1: ignition.FileEmbedded1{
			Contents: ignition.FileContents{Source: "data:;base64," + base64.StdEncoding.EncodeToString(content)},
			Mode:     ptr.To(mode),
		},
	}
}

func hasFile(files []machine.File, path string) bool {
	for _, f := range files {
		if f.Path == path {
			return true
		}
	}
	return false
}
