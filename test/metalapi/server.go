// Package metalapi is an in-process metal-api for tests: the endpoints the
// extension's metal machine provider and the agent's metal source use, kept
// in memory. It validates every request and every response against
// metal-go's own metal-api.json (kin-openapi, the whole spec as one root
// document), authenticates with metal-stack's security package and
// metal-lib's UserAuth filter as the metal-api does, and answers errors in
// the metal-api's encoding. Its "hardware" boots an allocated firewall, e.g.
// as a network namespace running the real agent (LocalHardware).
//
// What it cannot prove: that the real metal-api (RethinkDB, IPAM, switches,
// metal-hammer, the partition's boot process) behaves as this model of it.
package metalapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/metal-stack/metal-go/api/models"
)

// Options describe the metal-api's inventory.
type Options struct {
	// Keys are the HMAC keys per auth type (Metal-View, Metal-Edit,
	// Metal-Admin); an auth type without a key cannot authenticate.
	Keys map[string]string
	// Partition is the one partition, default "partition-a".
	Partition string
	// Sizes and Images are the known sizes and firewall images.
	Sizes, Images []string
	// Projects are the known projects.
	Projects []string
	// Networks are the known networks; give one underlay (the metal-api
	// adds it to every firewall) and a private network per project.
	Networks []Network
	// MachinesPerSize is how many free machines each size has. Default 10.
	MachinesPerSize int
	// Hardware boots allocated machines; nil: they phone home at once.
	Hardware Hardware
	// Log receives the server's log; discarded when nil.
	Log *slog.Logger
}

// Network is a network of the metal-api.
type Network struct {
	ID string
	// Prefix is the network's prefix, e.g. 203.0.113.0/24; machines get
	// the addresses after the first one.
	Prefix string
	// VRF names the firewall's interface into the network (vrf<vrf>).
	VRF int64
	// Private marks a project's private network (child of the partition's
	// private super network); ProjectID is its project.
	Private   bool
	ProjectID string
	// Underlay marks the partition's underlay network.
	Underlay bool
	// NAT makes traffic leaving through the network masqueraded.
	NAT bool
	// DestinationPrefixes are reached through the network, e.g. 0.0.0.0/0.
	DestinationPrefixes []string
}

// Server is the in-process metal-api.
type Server struct {
	// URL is where the metal-api is served.
	URL string

	opts   Options
	spec   *Spec
	http   *httptest.Server
	log    *slog.Logger
	faults faults

	mu         sync.Mutex
	machines   map[string]*machineRecord
	networks   map[string]*networkRecord
	allocated  int
	unanswered int
	// networkFinds counts the network searches (POST /v1/network/find).
	networkFinds int
	requests     int
	violations   []string
	nextIP       map[string]int
	nextASN      int64
	inFlight     sync.WaitGroup
	bootCtx      context.Context
	stopBoots    context.CancelFunc
}

// New starts the server on a loopback port.
func New(opts Options) (*Server, error) {
	spec, err := LoadSpec()
	if err != nil {
		return nil, err
	}
	if opts.Partition == "" {
		opts.Partition = "partition-a"
	}
	if opts.MachinesPerSize == 0 {
		opts.MachinesPerSize = 10
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{opts: opts, spec: spec, log: log, machines: map[string]*machineRecord{}, networks: map[string]*networkRecord{},
		nextIP: map[string]int{}, nextASN: 4200000000}
	s.bootCtx, s.stopBoots = context.WithCancel(context.Background())
	for _, n := range opts.Networks {
		if err := s.addNetwork(n); err != nil {
			return nil, err
		}
	}
	for _, size := range opts.Sizes {
		for i := range opts.MachinesPerSize {
			id := fmt.Sprintf("00000000-0000-0000-%04d-%012d", len(s.machines)/opts.MachinesPerSize, i)
			s.machines[id] = &machineRecord{id: id, size: size, partition: opts.Partition, liveliness: "Alive", created: time.Now().UTC()}
		}
	}
	auth, err := userAuth(opts.Keys, log)
	if err != nil {
		return nil, err
	}
	container := restful.NewContainer()
	container.Filter(auth)
	container.Add(s.firewallService())
	container.Add(s.machineService())
	container.Add(s.networkService())
	s.http = httptest.NewServer(s.validating(container))
	s.URL = s.http.URL
	return s, nil
}

// Close stops the server and halts every machine still booted.
func (s *Server) Close() {
	s.http.Close()
	s.stopBoots()
	s.inFlight.Wait()
	if hw := s.opts.Hardware; hw != nil {
		s.mu.Lock()
		var ids []string
		for id, m := range s.machines {
			if m.booted {
				ids = append(ids, id)
			}
		}
		s.mu.Unlock()
		for _, id := range ids {
			_ = hw.Halt(id)
		}
	}
}

// Violations are the requests and responses that did not match the spec,
// in order. A test fails when there is any.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) violation(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.log.Error("spec violation", "violation", msg)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, msg)
}

// Allocations counts the firewall allocations over the server's life.
func (s *Server) Allocations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allocated
}

// Unanswered counts the requests whose client had given up (timed out,
// hung up) when the answer was ready: the work was done, the client does not
// know it.
func (s *Server) Unanswered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unanswered
}

// Requests counts the requests the metal-api answered.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Allocated lists the IDs of the machines allocated now, sorted.
func (s *Server) Allocated() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, m := range s.machines {
		if m.alloc != nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// FreedAt is when the machine was last freed, if it ever was.
func (s *Server) FreedAt(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.machines[id]; ok {
		for _, e := range m.events {
			if e.event == eventReclaim {
				return e.time, true
			}
		}
	}
	return time.Time{}, false
}

// maxBody bounds what the server reads of a request.
const maxBody = 16 << 20

// validating checks each request and response against the spec around the
// metal-api's handlers. A violation is recorded, not answered differently:
// the client sees what the metal-api would do, the test sees the violation.
func (s *Server) validating(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.faults.intercept(w, r) {
			return
		}
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			s.violation("%s %s: reading the request: %v", r.Method, r.URL.Path, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		v, err := s.spec.ValidateRequest(r.Context(), r, body)
		if err != nil {
			s.violation("request: %v", err)
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		out := rec.Body.Bytes()
		if s.faults.garbage() {
			// A deliberate fault: the answer is garbage on purpose.
			out = []byte(`{"id": 42, "allocation": "not an allocation"`)
		} else if v != nil {
			if err := v.ValidateResponse(r.Context(), rec.Code, rec.Header(), out); err != nil {
				s.violation("response: %v", err)
			}
		}
		if r.Context().Err() != nil {
			// The client gave up before the answer was ready.
			s.mu.Lock()
			s.unanswered++
			s.mu.Unlock()
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// SetFirewallRules replaces the firewall rules of an allocated machine, as
// its owner would in the metal-api, and marks the machine changed.
func (s *Server) SetFirewallRules(id string, rules *models.V1FirewallRules) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[id]
	if !ok || m.alloc == nil {
		return fmt.Errorf("machine %s is not allocated", id)
	}
	if err := validateRules(rules); err != nil {
		return err
	}
	m.alloc.rules = storedRules(rules)
	m.changed = time.Now().UTC()
	return nil
}

// Firewall is the metal-api's view of an allocated machine, nil if the
// machine is not allocated.
func (s *Server) Firewall(id string) *models.V1FirewallResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[id]
	if !ok || m.alloc == nil {
		return nil
	}
	return m.firewallResponse()
}
