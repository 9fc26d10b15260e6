// Package local is the machine provider for one host: a firewall machine is a
// Linux network namespace with veth links to an internal and an external
// namespace, a root folder holding its userdata files, and firewall-agent
// running chrooted into that folder inside the namespace. It is what
// Gardener's provider-local is to real infrastructure: the local setup, the
// demo and the end-to-end tests use it. It needs root.
package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	agentconfigv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/agentconfig/v1alpha1"
	firewallv1alpha1 "github.com/metal-firewall/gardener-extension-firewall/pkg/apis/firewall/v1alpha1"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/controller/manager/machine"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/atomicfile"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// Options configure the local provider.
type Options struct {
	// StateDir holds one folder per machine; the provider finds its machines
	// there again after a restart.
	StateDir string
	// AgentPath is the firewall-agent binary (static) copied into each
	// machine's root.
	AgentPath string
	// AgentConfig is the agent's config path inside the machine's root.
	AgentConfig string
	// InternalNetNS and ExternalNetNS are the namespaces the machine's int0
	// and ext0 links lead to; they are created when missing.
	InternalNetNS string
	ExternalNetNS string
	// NetNSPrefix starts the name of each machine's namespace (default
	// "fw-"), so that a setup can find and remove its own machines.
	NetNSPrefix string
}

// Provider implements machine.Provider with network namespaces.
type Provider struct {
	opts Options
	mu   sync.Mutex
}

var _ machine.Provider = &Provider{}

// Default paths of the local provider.
const (
	DefaultStateDir    = "/var/lib/gardener-extension-firewall/local-machines"
	DefaultAgentConfig = agentconfigv1alpha1.ConfigPath
	DefaultNetNSPrefix = "fw-"
	agentInRoot        = "/usr/local/bin/firewall-agent"
	recordFile         = "machine.json"
)

// New returns a provider; it checks its prerequisites (CheckPrerequisites).
func New(opts Options) (*Provider, error) {
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.AgentConfig == "" {
		opts.AgentConfig = DefaultAgentConfig
	}
	if opts.NetNSPrefix == "" {
		opts.NetNSPrefix = DefaultNetNSPrefix
	}
	if opts.InternalNetNS == "" || opts.ExternalNetNS == "" {
		return nil, errors.New("local provider: internal and external namespace names are required")
	}
	if err := CheckPrerequisites(opts.AgentPath); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, err
	}
	return &Provider{opts: opts}, nil
}

// record is what the provider stores per machine.
type record struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Tags        map[string]string `json:"tags"`
	NetNS       string            `json:"netns"`
	PID         int               `json:"pid"`
	AllocatedAt time.Time         `json:"allocatedAt"`
}

func (p *Provider) dir(id string) string  { return filepath.Join(p.opts.StateDir, id) }
func (p *Provider) root(id string) string { return filepath.Join(p.dir(id), "root") }

// Find looks the machine up by ID, then by name and tags.
func (p *Provider) Find(_ context.Context, fw *firewallv1alpha1.Firewall) (*machine.Machine, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ms := fw.Status.MachineStatus; ms != nil && ms.MachineID != "" {
		rec, err := p.read(ms.MachineID)
		if err == nil {
			return p.machine(rec), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	entries, err := os.ReadDir(p.opts.StateDir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		rec, err := p.read(e.Name())
		if err != nil {
			continue
		}
		if m := p.machine(rec); machine.MatchesTags(m, fw) {
			return m, nil
		}
	}
	return nil, nil
}

func (p *Provider) read(id string) (*record, error) {
	data, err := os.ReadFile(filepath.Join(p.dir(filepath.Base(id)), recordFile))
	if err != nil {
		return nil, err
	}
	rec := &record{}
	return rec, json.Unmarshal(data, rec)
}

func (p *Provider) machine(rec *record) *machine.Machine {
	m := &machine.Machine{ID: rec.ID, Name: rec.Name, Tags: rec.Tags, AllocatedAt: rec.AllocatedAt}
	switch {
	case !netns.Exists(rec.NetNS):
		m.Message = "network namespace " + rec.NetNS + " is gone"
	case !p.agentRunning(rec):
		m.Message = "firewall-agent is not running, see " + filepath.Join(p.dir(rec.ID), "agent.log")
	default:
		m.Provisioned = true
		m.Message = fmt.Sprintf("namespace %s, agent pid %d", rec.NetNS, rec.PID)
	}
	return m
}

// agentRunning checks the PID and that it is really this machine's agent
// (its root is the machine's folder), not a process that got the PID later.
func (p *Provider) agentRunning(rec *record) bool {
	if rec.PID <= 0 || syscall.Kill(rec.PID, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(rec.PID) + "/stat")
	if err != nil || strings.Contains(string(stat), ") Z ") {
		return false
	}
	root, err := os.Readlink("/proc/" + strconv.Itoa(rec.PID) + "/root")
	return err == nil && root == p.root(rec.ID)
}

// Links name a machine's interfaces into the internal and the external
// namespace.
type Links struct {
	Internal, External string
}

// DefaultLinks are the interfaces of a machine made by Create.
var DefaultLinks = Links{Internal: "int0", External: "ext0"}

// Create builds the namespace, writes the userdata into the root and starts
// the agent. A failure half-way removes what was built.
func (p *Provider) Create(ctx context.Context, fw *firewallv1alpha1.Firewall, userdata []machine.File) (*machine.Machine, error) {
	return p.CreateWithLinks(ctx, fw, userdata, DefaultLinks)
}

// CreateWithLinks is Create with the machine's interfaces named links, e.g.
// as metal-stack names a firewall's interfaces after its networks' VRFs.
func (p *Provider) CreateWithLinks(_ context.Context, fw *firewallv1alpha1.Firewall, userdata []machine.File, links Links) (m *machine.Machine, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	short := hex.EncodeToString(suffix)
	rec := &record{ID: "local-" + short, Name: fw.Name, Tags: machine.Tags(fw), NetNS: p.opts.NetNSPrefix + short, AllocatedAt: time.Now().UTC().Truncate(time.Second)}
	defer func() {
		if err != nil {
			_ = p.destroy(rec)
		}
	}()

	if err := os.MkdirAll(p.root(rec.ID), 0o700); err != nil {
		return nil, err
	}
	if err := writeFiles(p.root(rec.ID), userdata); err != nil {
		return nil, err
	}
	if err := copyFile(p.opts.AgentPath, filepath.Join(p.root(rec.ID), agentInRoot), 0o755); err != nil {
		return nil, fmt.Errorf("copying the agent into the machine: %w", err)
	}
	if err := p.network(rec.NetNS, short, links); err != nil {
		return nil, err
	}
	// As the firewall-agent-boot unit does on metal before the network comes up: the agent's
	// table is in the kernel before the machine forwards anything.
	if err := p.boot(rec); err != nil {
		return nil, err
	}
	if err := (&netns.NS{Name: rec.NetNS}).EnableForwarding(); err != nil {
		return nil, err
	}
	if rec.PID, err = p.startAgent(rec); err != nil {
		return nil, err
	}
	if err := p.write(rec); err != nil {
		return nil, err
	}
	return p.machine(rec), nil
}

// network creates the machine's namespace with its two links, not yet
// forwarding; their peers are named fw<id>i and fw<id>e in the internal and
// external namespaces.
func (p *Provider) network(name, short string, links Links) error {
	outside := map[string]*netns.NS{}
	for _, n := range []string{p.opts.InternalNetNS, p.opts.ExternalNetNS} {
		outside[n] = &netns.NS{Name: n}
		if !netns.Exists(n) {
			if _, err := netns.New(n); err != nil {
				return err
			}
		}
	}
	ns, err := netns.New(name)
	if err != nil {
		return err
	}
	if err := netns.Veth(ns, links.Internal, "", outside[p.opts.InternalNetNS], "fw"+short+"i", ""); err != nil {
		return err
	}
	return netns.Veth(ns, links.External, "", outside[p.opts.ExternalNetNS], "fw"+short+"e", "")
}

// boot runs the agent's boot step chrooted into the machine: its last good
// ruleset, or the closed table.
func (p *Provider) boot(rec *record) error {
	if _, err := (&netns.NS{Name: rec.NetNS}).Exec("chroot", p.root(rec.ID), agentInRoot, "boot"); err != nil {
		return fmt.Errorf("the agent's boot step: %w", err)
	}
	return nil
}

// startAgent runs the agent chrooted into the machine's root inside its
// network namespace, in its own session so it outlives the manager like a
// real machine does.
func (p *Provider) startAgent(rec *record) (int, error) {
	logFile, err := os.OpenFile(filepath.Join(p.dir(rec.ID), "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logFile.Close() }()
	// Its own UTS namespace gives the machine the Firewall's name as hostname,
	// as on metal, where the agent's name defaults to the hostname. Every step
	// execs, so the recorded PID ends up being the agent's.
	cmd := exec.Command("ip", "netns", "exec", rec.NetNS, "unshare", "--uts", "--",
		"sh", "-c", `hostname "$0" && exec chroot "$1" "$2" --config "$3"`,
		rec.Name, p.root(rec.ID), agentInRoot, p.opts.AgentConfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the agent: %w", err)
	}
	// Reap the process if it exits while this manager runs; after a restart
	// init does.
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

func (p *Provider) write(rec *record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(p.dir(rec.ID), recordFile), data, 0o600)
}

// Delete stops the agent, removes the namespace (and with it the veth
// pairs) and the machine's folder.
func (p *Provider) Delete(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec, err := p.read(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return p.destroy(rec)
}

func (p *Provider) destroy(rec *record) error {
	if rec.PID > 0 && p.agentRunning(rec) {
		_ = syscall.Kill(-rec.PID, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for p.agentRunning(rec) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if p.agentRunning(rec) {
			_ = syscall.Kill(-rec.PID, syscall.SIGKILL)
		}
	}
	if netns.Exists(rec.NetNS) {
		if err := (&netns.NS{Name: rec.NetNS}).Delete(); err != nil {
			return err
		}
	}
	return os.RemoveAll(p.dir(rec.ID))
}

// writeFiles writes userdata below root, refusing paths that escape it.
func writeFiles(root string, files []machine.File) error {
	for _, f := range files {
		dest := filepath.Join(root, filepath.Clean("/"+f.Path))
		if err := os.MkdirAll(filepath.Dir(dest), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(dest, f.Content, f.Mode.Perm()); err != nil {
			return err
		}
		// WriteFile honours the umask; the mode asked for is the mode set.
		if err := os.Chmod(dest, f.Mode.Perm()); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dest string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o750); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
