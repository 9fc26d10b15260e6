package acl_test

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// requestLine is one apiserver_request_total series of the kube-apiserver's /metrics.
var requestLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} ([0-9.e+]+)$`)

var requestLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// apiserverRequests reads the kube-apiserver's request counters, summed per verb and
// resource[/subresource]: the bench tells who keeps the kube-apiserver busy.
func apiserverRequests(cfg *rest.Config) map[string]float64 {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx())
	Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := requestLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range requestLabel.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		n, err := strconv.ParseFloat(m[2], 64)
		Expect(err).NotTo(HaveOccurred())
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key] += n
	}
	return out
}

// topRequests formats the largest differences between two readings, at most n of them.
func topRequests(before, after map[string]float64, n int) string {
	type count struct {
		key string
		n   float64
	}
	var counts []count
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			counts = append(counts, count{k, d})
		}
	}
	sort.Slice(counts, func(i, j int) bool { return counts[i].n > counts[j].n })
	var parts []string
	for i, c := range counts {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.0f", c.key, c.n))
	}
	return strings.Join(parts, "; ")
}
