package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/metal-firewall/gardener-extension-firewall/test/lab/stream"
)

// The lab's streams: the node sends StreamRate numbered UDP packets a second
// to this host on StreamToHost, this host as many to the node's load
// balancer address on StreamToNode, and this host keeps an iperf3 TCP flow
// to the node on IperfPort, while they run. The shoot's policy and a
// LoadBalancer Service must allow them.
//
// StreamRate is 200, not 1,000: the lab machine runs under software
// emulation on two shared cores, and at 1,000 a second each way its CPUs
// were saturated (load 6.6, the node's receiver got 50 a second) and a new
// firewall took minutes to install. At 200 a second a gap of 5 ms loses a
// packet.
const (
	StreamToHost = 7300
	StreamToNode = 7301
	StreamRate   = 200
	IperfPort    = 5201
	// iperfRate keeps the TCP flow from taking the emulated lab's CPU from
	// the streams.
	iperfRate = "500K"
)

// Streams are the running streams.
type Streams struct {
	l       *Lab
	host    []*exec.Cmd
	iperf   *exec.Cmd
	stopped bool
	result  StreamsResult
}

// StreamsResult is what the streams saw, in each direction.
type StreamsResult struct {
	ToHost, ToNode stream.Report
	Iperf          IperfResult
}

// IperfResult is what the iperf3 client saw of its TCP flow.
type IperfResult struct {
	// Survived tells that the flow ran until it was stopped, and the server
	// confirmed what it received.
	Survived bool
	// LongestStallSeconds is the longest run of one-second intervals in
	// which nothing was sent.
	LongestStallSeconds int
	// Retransmits counts the sender's retransmitted segments.
	Retransmits int
	// Output is the client's output, for the report.
	Output string
}

// StartStreams starts the streams; StartProbes must have built labprobe.
func (l *Lab) StartStreams(ctx context.Context) (_ *Streams, err error) {
	bin := filepath.Join(l.opts.Share, "labprobe")
	s := &Streams{l: l}
	defer func() {
		if err != nil {
			_, _ = s.Stop(context.WithoutCancel(ctx))
		}
	}()
	var vm strings.Builder
	fmt.Fprintf(&vm, "setsid ip netns exec node /lab/share/labprobe stream-recv %s:%d /lab/share/stream-to-node.json >/dev/null 2>&1 </dev/null & echo $! >/lab/share/stream-recv.pid\n", LoadBalancerAddress, StreamToNode)
	fmt.Fprintf(&vm, "setsid ip netns exec node /lab/share/labprobe stream-send %s:%d %d >/lab/share/stream-send-vm.log 2>&1 </dev/null & echo $! >/lab/share/stream-send.pid\n", HostAddress, StreamToHost, StreamRate)
	fmt.Fprintf(&vm, "setsid ip netns exec node iperf3 --server --one-off --bind %s --port %d >/dev/null 2>&1 </dev/null &\n", LoadBalancerAddress, IperfPort)
	if _, err := l.Run(ctx, vm.String()); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"stream-recv", fmt.Sprintf("%s:%d", HostAddress, StreamToHost), filepath.Join(l.opts.Share, "stream-to-host.json")},
		{"stream-send", fmt.Sprintf("%s:%d", LoadBalancerAddress, StreamToNode), strconv.Itoa(StreamRate)},
	} {
		log, err := os.Create(filepath.Join(l.opts.Share, "labprobe-"+args[0]+".log"))
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, args...) //nolint:gosec // the lab's own probe
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = dieWithTest()
		err = cmd.Start()
		_ = log.Close()
		if err != nil {
			return nil, err
		}
		s.host = append(s.host, cmd)
	}
	// Both receivers write their report at once: wait for them.
	for i := 0; ; i++ {
		_, _, err := s.Report()
		if err == nil {
			return s, nil
		}
		if i == 100 {
			logs, _ := os.ReadFile(filepath.Join(l.opts.Share, "labprobe-stream-recv.log"))
			return nil, fmt.Errorf("the stream receivers did not start: %w (this host's: %s)", err, logs)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StartIperf starts the TCP flow once the policy lets it through: it
// retries the connection until the node's server answers.
func (s *Streams) StartIperf(ctx context.Context) error {
	out, err := os.Create(filepath.Join(s.l.opts.Share, "iperf.txt"))
	if err != nil {
		return err
	}
	defer out.Close()
	s.iperf = exec.Command("iperf3", "--client", LoadBalancerAddress.String(), "--port", strconv.Itoa(IperfPort), //nolint:gosec // fixed arguments
		"--bitrate", iperfRate, "--time", "3600", "--interval", "1", "--forceflush", "--connect-timeout", "3000")
	s.iperf.Stdout, s.iperf.Stderr = out, out
	s.iperf.SysProcAttr = dieWithTest()
	return s.iperf.Start()
}

// Report reads what the receivers saw so far.
func (s *Streams) Report() (toHost, toNode stream.Report, err error) {
	for _, r := range []struct {
		file string
		into *stream.Report
	}{{"stream-to-host.json", &toHost}, {"stream-to-node.json", &toNode}} {
		data, err := os.ReadFile(filepath.Join(s.l.opts.Share, r.file))
		if err != nil {
			return toHost, toNode, err
		}
		if err := json.Unmarshal(data, r.into); err != nil {
			return toHost, toNode, fmt.Errorf("%s: %w", r.file, err)
		}
	}
	return toHost, toNode, nil
}

// Stop stops the senders (once; again it returns what the first saw), waits until what is in flight arrived (the
// receivers' counts stand still), stops the receivers and the TCP flow,
// and returns what they saw.
func (s *Streams) Stop(ctx context.Context) (StreamsResult, error) {
	if s.stopped {
		return s.result, nil
	}
	s.stopped = true
	var res StreamsResult
	var errs []error
	if len(s.host) > 1 {
		_ = s.host[1].Process.Kill()
		_ = s.host[1].Wait()
	}
	// Only the sender: a sender that died early leaves its PID to be
	// reused, and why it died is in its log.
	out, err := s.l.Run(ctx, `P=$(cat /lab/share/stream-send.pid); if grep -qs stream-send /proc/$P/cmdline; then kill $P; else echo "the sender had exited: $(tail -c 500 /lab/share/stream-send-vm.log)"; fi`)
	errs = append(errs, err)
	if strings.Contains(out, "had exited") {
		errs = append(errs, errors.New(strings.TrimSpace(out)))
	}
	var last [2]int
	for i := 0; i < 50; i++ {
		h, n, err := s.Report()
		if err == nil && h.Received == last[0] && n.Received == last[1] && i > 0 {
			break
		}
		last = [2]int{h.Received, n.Received}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
	res.ToHost, res.ToNode, err = s.Report()
	errs = append(errs, err)
	if len(s.host) > 0 {
		_ = s.host[0].Process.Kill()
		_ = s.host[0].Wait()
	}
	// The bracket keeps pkill's pattern from matching this very shell, whose
	// command line holds it: a plain 'iperf3 --server' killed the shell
	// (exit 143) and failed every Stop.
	_, err = s.l.Run(ctx, "kill $(cat /lab/share/stream-recv.pid) 2>/dev/null; pkill -f 'iperf3 --serve[r]' || true")
	errs = append(errs, err)
	if s.iperf != nil && s.iperf.Process != nil {
		_ = s.iperf.Process.Signal(syscall.SIGINT)
		_ = s.iperf.Wait()
		data, err := os.ReadFile(filepath.Join(s.l.opts.Share, "iperf.txt"))
		errs = append(errs, err)
		res.Iperf = parseIperf(string(data))
	}
	s.result = res
	return res, errors.Join(errs...)
}

var (
	iperfInterval = regexp.MustCompile(`(?m)^\[\s*\d+\]\s+[\d.]+-[\d.]+\s+sec\s+\S+\s+\S+\s+(\S+)\s+\S+/sec\s+(\d+)`)
	iperfReceiver = regexp.MustCompile(`(?m)sec\s+.*\s+receiver$`)
)

// parseIperf reads iperf3's client output.
func parseIperf(out string) IperfResult {
	r := IperfResult{Output: out, Survived: iperfReceiver.MatchString(out) && !strings.Contains(out, "error")}
	stall := 0
	for _, m := range iperfInterval.FindAllStringSubmatch(out, -1) {
		if rate, _ := strconv.ParseFloat(m[1], 64); rate == 0 {
			stall++
			r.LongestStallSeconds = max(r.LongestStallSeconds, stall)
		} else {
			stall = 0
		}
		n, _ := strconv.Atoi(m[2])
		r.Retransmits += n
	}
	return r
}

// MarkStreams makes the machine set the TTL of the stream packets it
// forwards to ttl (the receivers see one less: the leaf routes them once
// more), and count them: which firewall carried each packet. A reload of
// nftables.service removes the table.
func (m *Machine) MarkStreams(ctx context.Context, ttl int) error {
	_, err := m.Exec(ctx, fmt.Sprintf(`nft -f - <<'EOF'
table ip labmark {
	chain post {
		type filter hook postrouting priority 300; policy accept;
		udp dport %d counter ip ttl set %d
		udp dport %d counter ip ttl set %d
	}
}
EOF`, StreamToHost, ttl, StreamToNode, ttl))
	return err
}

var markCounter = regexp.MustCompile(`udp dport (\d+) counter packets (\d+)`)

// StreamCounters are the machine's counts of the stream packets it
// forwarded, by port (MarkStreams).
func (m *Machine) StreamCounters(ctx context.Context) (map[int]int, error) {
	out, err := m.Exec(ctx, "nft list chain ip labmark post")
	if err != nil {
		return nil, err
	}
	counts := map[int]int{}
	for _, c := range markCounter.FindAllStringSubmatch(out, -1) {
		port, _ := strconv.Atoi(c[1])
		n, _ := strconv.Atoi(c[2])
		counts[port] += n
	}
	return counts, nil
}

// dieWithTest has the kernel kill a process of this host when the test
// process dies without its cleanup (a timeout, SIGQUIT), as the lab's qemu.
func dieWithTest() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
