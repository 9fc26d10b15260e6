package agent_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/metrics/metricstest"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/firewall/selfupdate"
	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// The agent updates itself in the firewall's namespace: from the suite's
// binary (v0.0.0-test) to a v0.1.0 built here, served over HTTP; a tampered
// release is refused and a broken one rolled back. The table stays in the
// kernel throughout, and a TCP connection through the firewall lives on.
var _ = Describe("the agent's self-update", func() {
	It("switches to a signed release, refuses a tampered one and rolls back a broken one, the ruleset and a connection intact", func() {
		t := newTopology()
		serve(t.outside, "::", 8080)
		dir := GinkgoT().TempDir()
		newBinary := filepath.Join(dir, "firewall-agent-v0.1.0")
		out, err := exec.Command("go", "build", "-o", newBinary,
			"-ldflags", "-X github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent/app.Version=v0.1.0",
			"github.com/metal-firewall/gardener-extension-firewall/cmd/firewall-agent").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))

		By("installing the suite's agent with the operator's public key")
		installed := filepath.Join(dir, "bin", "firewall-agent")
		Expect(os.MkdirAll(filepath.Dir(installed), 0o755)).To(Succeed())
		oldData, err := os.ReadFile(binary)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(installed, oldData, 0o755)).To(Succeed())
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		Expect(err).NotTo(HaveOccurred())
		der, err := x509.MarshalPKIXPublicKey(pub)
		Expect(err).NotTo(HaveOccurred())
		keyPath := filepath.Join(dir, "update.pub")
		Expect(os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)).To(Succeed())

		releases := serveReleases(t.fw)
		cfgDir := filepath.Join(dir, "etc")
		Expect(os.MkdirAll(cfgDir, 0o700)).To(Succeed())
		cfgPath := filepath.Join(cfgDir, "config.yaml")
		// agent is the sources.static.agent line, "" for none.
		config := func(agent string) string {
			return strings.NewReplacer("  firewall: {source: static}",
				fmt.Sprintf("  firewall: {source: static, selfUpdate: {enabled: true, publicKeyFile: %s, healthTimeout: 5s}}", keyPath),
				"  static:\n", "  static:"+agent+"\n").Replace(configYAML("", ""))
		}
		writeConfig(cfgPath, config(""))

		logPath := filepath.Join(dir, "agent.log")
		logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(logFile.Close)
		logs := func() string { data, _ := os.ReadFile(logPath); return string(data) }
		cmd := exec.Command("ip", "netns", "exec", t.fw.Name, installed, "--last-good-ruleset", lastGoodPath(), "--config", cfgPath, "--poll-interval", "100ms",
			"--metrics-bind-address", "127.0.0.1:2112")
		// A file, not a pipe: the watchdog and the restarted agent write on after the first process is gone.
		cmd.Stdout, cmd.Stderr = logFile, logFile
		Expect(cmd.Start()).To(Succeed())
		go func() { _ = cmd.Wait() }()
		DeferCleanup(func() { stopAgents(dir) })

		Eventually(logs).WithTimeout(10 * time.Second).Should(ContainSubstring("mode=full"))
		Eventually(func() string { return agentVersion(t.fw) }).Should(Equal("v0.0.0-test"))
		Expect(logs()).To(ContainSubstring(`state=UpToDate wanted="" running=v0.0.0-test message="the source names no agent version"`))
		table := stripCounters(listTable(t.fw))
		conn := openEcho(t.node, outsideV4, 8080)
		expectDropped(t.node, outsideV4, 9090)

		By("switching to a signed v0.1.0: the same process runs it, installs it and keeps the old binary as .previous")
		newData, err := os.ReadFile(newBinary)
		Expect(err).NotTo(HaveOccurred())
		writeConfig(cfgPath, config(releases.publish("v0.1.0", newData, priv)))
		Eventually(func() string { return agentVersion(t.fw) }).WithTimeout(30 * time.Second).Should(Equal("v0.1.0"))
		Eventually(logs).WithTimeout(10 * time.Second).Should(ContainSubstring("the new agent version applied the ruleset and is installed"))
		Expect(fileDigest(installed)).To(Equal(digestOf(newData)))
		Expect(fileDigest(installed + selfupdate.PreviousSuffix)).To(Equal(digestOf(oldData)))
		Expect(strings.Count(logs(), "msg=starting")).To(Equal(2), "one start of each version")
		Expect(runningPIDs(dir)).To(ContainElement(cmd.Process.Pid), "re-executed in place: the same process")
		Expect(stripCounters(listTable(t.fw))).To(Equal(table), "the table stayed in the kernel")
		conn.expectAlive()

		By("refusing v0.2.0 whose binary was replaced after signing")
		tampered := releases.publish("v0.2.0", newData, priv)
		releases.replace("v0.2.0", append(newData[:len(newData):len(newData)], 0))
		writeConfig(cfgPath, config(tampered))
		Eventually(logs).WithTimeout(30 * time.Second).Should(ContainSubstring("state=Refused wanted=v0.2.0 running=v0.1.0 message=\"wrong checksum"))
		Consistently(func() string { return agentVersion(t.fw) }).WithTimeout(2 * time.Second).Should(Equal("v0.1.0"))
		Expect(fileDigest(installed)).To(Equal(digestOf(newData)))

		By("refusing v0.2.1 signed by another key")
		badSig := releases.publish("v0.2.1", newData, priv)
		releases.resign("v0.2.1", newData, func(msg []byte) []byte {
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			return ed25519.Sign(other, msg)
		})
		writeConfig(cfgPath, config(badSig))
		Eventually(logs).WithTimeout(30 * time.Second).Should(ContainSubstring("state=Refused wanted=v0.2.1 running=v0.1.0 message=\"bad signature"))
		Expect(agentVersion(t.fw)).To(Equal("v0.1.0"))
		Expect(agentMetrics(t.fw)).To(HaveKeyWithValue(`firewall_agent_self_update_state{state="Refused",wanted_version="v0.2.1"}`, 1.0))
		Expect(stripCounters(listTable(t.fw))).To(Equal(table))

		By("rolling back v0.3.0, signed but exiting at once, to v0.1.0 within the health timeout")
		broken := []byte("#!/bin/sh\necho broken agent >&2\nexit 1\n")
		writeConfig(cfgPath, config(releases.publish("v0.3.0", broken, priv)))
		Eventually(logs).WithTimeout(30 * time.Second).Should(ContainSubstring("broken agent"))
		Eventually(logs).WithTimeout(10 * time.Second).Should(ContainSubstring("rolled back: v0.3.0 stopped running before it applied the ruleset"))
		Eventually(func() string { return agentVersion(t.fw) }).WithTimeout(10 * time.Second).Should(Equal("v0.1.0"))
		Eventually(logs).WithTimeout(10 * time.Second).Should(ContainSubstring(`state=RolledBack wanted=v0.3.0`))
		Eventually(func() map[string]float64 { return agentMetrics(t.fw) }).Should(
			HaveKeyWithValue(`firewall_agent_self_update_state{state="RolledBack",wanted_version="v0.3.0"}`, 1.0))
		Expect(fileDigest(installed)).To(Equal(digestOf(newData)), "the installed binary was never replaced")
		Expect(installed + selfupdate.StagedSuffix).NotTo(BeAnExistingFile())
		Expect(stripCounters(listTable(t.fw))).To(Equal(table), "the table stayed in the kernel")
		conn.expectAlive()
		expectDropped(t.node, outsideV4, 9090)
		Consistently(func() string { return agentVersion(t.fw) }).WithTimeout(2*time.Second).Should(Equal("v0.1.0"), "v0.3.0 is not tried again")
	})
})

// releases serves agent binaries and their signatures by version, from a
// listener in the firewall's namespace.
type releases struct {
	mu    sync.Mutex
	url   string
	files map[string][]byte
}

func serveReleases(ns *netns.NS) *releases {
	r := &releases{files: map[string][]byte{}}
	var l net.Listener
	Expect(ns.Do(func() (err error) {
		l, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	})).To(Succeed())
	r.url = "http://" + l.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		data, ok := r.files[req.URL.Path]
		r.mu.Unlock()
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(data)
	})}
	go func() { _ = srv.Serve(l) }()
	DeferCleanup(srv.Close)
	return r
}

// publish serves data as version with a valid signature and returns the
// config's sources.static.agent line.
func (r *releases) publish(version string, data []byte, priv ed25519.PrivateKey) string {
	r.replace(version, data)
	r.resign(version, data, func(msg []byte) []byte { return ed25519.Sign(priv, msg) })
	return fmt.Sprintf("\n    agent: {version: %s, url: %s/%s, sha256: %s}", version, r.url, version, digestOf(data))
}

func (r *releases) replace(version string, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files["/"+version] = data
}

func (r *releases) resign(version string, data []byte, sign func([]byte) []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files["/"+version+".sig"] = sign(selfupdate.SignedMessage(version, digestOf(data)))
}

// agentVersion is the version the agent's metrics in ns report, "" while
// they cannot be read (the agent is switching).
func agentVersion(ns *netns.NS) string {
	for k := range agentMetrics(ns) {
		if v, ok := strings.CutPrefix(k, `firewall_agent_build_info{version="`); ok {
			return strings.TrimSuffix(v, `"}`)
		}
	}
	return ""
}

// agentMetrics are the agent's metrics in ns, nil while they cannot be read.
func agentMetrics(ns *netns.NS) map[string]float64 {
	var c net.Conn
	if err := ns.Do(func() (err error) {
		c, err = net.DialTimeout("tcp", "127.0.0.1:2112", time.Second)
		return err
	}); err != nil {
		return nil
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n"); err != nil {
		return nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	m, err := metricstest.Parse(string(body))
	if err != nil {
		return nil
	}
	return m
}

// listTable is the agent's table in ns.
func listTable(ns *netns.NS) string {
	GinkgoHelper()
	out, err := ns.Exec("nft", "list", "table", "inet", "firewall-agent")
	Expect(err).NotTo(HaveOccurred())
	return out
}

// echo is a TCP connection to serve's echo through the firewall.
type echo struct {
	c net.Conn
	r *bufio.Reader
	n int
}

func openEcho(ns *netns.NS, addr string, port int) *echo {
	GinkgoHelper()
	c, err := dial(ns, addr, port, 2*time.Second)
	Expect(err).NotTo(HaveOccurred())
	e := &echo{c: c, r: bufio.NewReader(c)}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, err = e.r.ReadString('\n')
	Expect(err).NotTo(HaveOccurred(), "the greeting")
	e.expectAlive()
	return e
}

// expectAlive sends a line over the connection and expects it back.
func (e *echo) expectAlive() {
	GinkgoHelper()
	e.n++
	line := fmt.Sprintf("ping %d\n", e.n)
	_ = e.c.SetDeadline(time.Now().Add(2 * time.Second))
	_, err := io.WriteString(e.c, line)
	Expect(err).NotTo(HaveOccurred())
	got, err := e.r.ReadString('\n')
	Expect(err).NotTo(HaveOccurred(), "the connection through the firewall")
	Expect(got).To(Equal(line))
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func fileDigest(path string) string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return digestOf(data)
}

// runningPIDs are the processes whose binary lies in dir: the agents and
// watchdogs this test started, wherever they were re-parented to.
func runningPIDs(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopAgents ends the agents and watchdogs the test started, by pid.
func stopAgents(dir string) {
	for _, pid := range runningPIDs(dir) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	Eventually(func() []int { return runningPIDs(dir) }).WithTimeout(10 * time.Second).Should(BeEmpty())
}
