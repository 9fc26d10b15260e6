package agent_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/metal-firewall/gardener-extension-firewall/pkg/utils/netns"
)

// loadResult is what a load generator measured against one server.
type loadResult struct {
	tool string
	// qps counts the answered queries per second.
	qps float64
	// lost is the fraction of queries without an answer.
	lost float64
	// latencies are recorded in paced runs only.
	latencies []time.Duration
}

// dnsLoad sends the names' A queries from ns to server:53 for d, as fast as
// the answers come (rate 0) or at rate queries/s, with dnsperf (Debian) if
// it is installed and BENCH_DNS_LOAD is not "go", else with goLoad.
func dnsLoad(ns *netns.NS, server string, names []string, d time.Duration, rate int) loadResult {
	GinkgoHelper()
	if _, err := exec.LookPath("dnsperf"); err != nil || os.Getenv("BENCH_DNS_LOAD") == "go" {
		return goLoad(ns, server, names, d, rate)
	}
	file := GinkgoT().TempDir() + "/queries"
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s A\n", n)
	}
	Expect(os.WriteFile(file, []byte(b.String()), 0o600)).To(Succeed())
	args := []string{"-s", server, "-d", file, "-l", strconv.Itoa(int(d.Seconds())), "-c", "8", "-T", "1", "-t", "1"}
	if rate > 0 {
		args = append(args, "-Q", strconv.Itoa(rate), "-v")
	}
	// Standard output only: the warnings about late answers go to standard
	// error, one line each.
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns.Name, "dnsperf"}, args...)...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	Expect(cmd.Run()).To(Succeed())
	out := stdout.String()
	res := loadResult{tool: "dnsperf"}
	res.qps = parseFloat(out, `Queries per second:\s+([0-9.]+)`)
	res.lost = parseFloat(out, `Queries lost:\s+\d+ \(([0-9.]+)%\)`) / 100
	for _, m := range regexp.MustCompile(`(?m)^> NOERROR \S+ A ([0-9.]+)$`).FindAllStringSubmatch(out, -1) {
		s, err := strconv.ParseFloat(m[1], 64)
		Expect(err).NotTo(HaveOccurred())
		res.latencies = append(res.latencies, time.Duration(s*float64(time.Second)))
	}
	return res
}

func parseFloat(out, re string) float64 {
	GinkgoHelper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	Expect(m).NotTo(BeNil(), "%q in\n%s", re, out)
	f, err := strconv.ParseFloat(m[1], 64)
	Expect(err).NotTo(HaveOccurred())
	return f
}

// goLoad is the load generator when dnsperf is not there: workers with a
// UDP socket each, one query in flight per worker (32 when unpaced, 4 when
// paced), a second's timeout.
func goLoad(ns *netns.NS, server string, names []string, d time.Duration, rate int) loadResult {
	GinkgoHelper()
	workers := 32
	if rate > 0 {
		workers = 4
	}
	conns := make([]net.Conn, workers)
	Expect(ns.Do(func() error {
		for i := range conns {
			c, err := net.Dial("udp", net.JoinHostPort(server, "53"))
			if err != nil {
				return err
			}
			conns[i] = c
		}
		return nil
	})).To(Succeed())
	var (
		mu              sync.Mutex
		wg              sync.WaitGroup
		sent, answered  int
		latencies       []time.Duration
		start           = time.Now()
		deadline        = start.Add(d)
		interval        time.Duration
		queries         = make([][]byte, len(names))
		recordLatencies = rate > 0
	)
	if rate > 0 {
		interval = time.Duration(workers) * time.Second / time.Duration(rate)
	}
	for i, n := range names {
		raw, err := new(dns.Msg).SetQuestion(n, dns.TypeA).Pack()
		Expect(err).NotTo(HaveOccurred())
		queries[i] = raw
	}
	for w, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = c.Close() }()
			buf, scratch := make([]byte, 4096), make([]byte, 0, 512)
			var s, a int
			var lat []time.Duration
			next := time.Now()
			for j := w; time.Now().Before(deadline); j += workers {
				if interval > 0 {
					time.Sleep(time.Until(next))
					next = next.Add(interval)
				}
				q := append(scratch[:0], queries[j%len(queries)]...)
				id := uint16(j)
				q[0], q[1] = byte(id>>8), byte(id)
				sentAt := time.Now()
				s++
				if _, err := c.Write(q); err != nil {
					continue
				}
				_ = c.SetReadDeadline(sentAt.Add(time.Second))
				for {
					n, err := c.Read(buf)
					if err != nil {
						break
					}
					if n >= 2 && buf[0] == q[0] && buf[1] == q[1] {
						a++
						if recordLatencies {
							lat = append(lat, time.Since(sentAt))
						}
						break
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			sent, answered, latencies = sent+s, answered+a, append(latencies, lat...)
		}()
	}
	wg.Wait()
	res := loadResult{tool: "Go generator", qps: float64(answered) / time.Since(start).Seconds(), latencies: latencies}
	if sent > 0 {
		res.lost = float64(sent-answered) / float64(sent)
	}
	return res
}

// percentile returns the p-th percentile (0-100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}

// cpuSeconds is the CPU time the process pid used so far (user and system).
func cpuSeconds(pid int) float64 {
	GinkgoHelper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	Expect(err).NotTo(HaveOccurred())
	// The fields after the command name (which may hold blanks), from field 3.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	utime, err := strconv.ParseFloat(fields[11], 64)
	Expect(err).NotTo(HaveOccurred())
	stime, err := strconv.ParseFloat(fields[12], 64)
	Expect(err).NotTo(HaveOccurred())
	return (utime + stime) / 100 // USER_HZ
}

// printTable prints rows as a Markdown table; the first row is the header.
func printTable(title string, rows [][]string) {
	fmt.Printf("\n%s\n\n", title)
	for i, r := range rows {
		fmt.Printf("| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Println("|---" + strings.Repeat("|---:", len(r)-1) + "|")
		}
	}
	fmt.Println()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }
