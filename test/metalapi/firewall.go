package metalapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/google/uuid"
	"github.com/metal-stack/metal-go/api/models"
	"github.com/metal-stack/metal-lib/httperrors"
	"github.com/metal-stack/security"
	"golang.org/x/crypto/ssh"
	"k8s.io/utils/ptr"
)

func (s *Server) firewallService() *restful.WebService {
	ws := new(restful.WebService)
	ws.Path("/v1/firewall").Consumes(restful.MIME_JSON).Produces(restful.MIME_JSON)
	ws.Route(ws.GET("/{id}").To(viewer(s.findFirewall)))
	ws.Route(ws.POST("/find").To(viewer(s.findFirewalls)))
	ws.Route(ws.POST("/allocate").To(editor(s.allocateFirewall)))
	return ws
}

// findFirewall: 404 for an unknown machine and for one that is no
// (allocated) firewall, as the metal-api answers.
func (s *Server) findFirewall(req *restful.Request, resp *restful.Response) {
	id := req.PathParameter("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[id]
	switch {
	case !ok:
		sendError(resp, httperrors.NotFound(fmt.Errorf("no machine with id %q found", id)))
	case m.alloc == nil:
		sendError(resp, httperrors.NotFound(errors.New("machine is not a firewall")))
	default:
		send(resp, http.StatusOK, m.firewallResponse())
	}
}

// findFirewalls matches the criteria the clients use: ID, allocation name,
// hostname and project, and tags (all of them).
func (s *Server) findFirewalls(req *restful.Request, resp *restful.Response) {
	q := &models.V1FirewallFindRequest{}
	if err := req.ReadEntity(q); err != nil {
		sendError(resp, httperrors.BadRequest(err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*models.V1FirewallResponse{}
	for _, id := range s.sortedIDs() {
		m := s.machines[id]
		a := m.alloc
		switch {
		case a == nil,
			q.ID != "" && q.ID != id,
			q.AllocationName != "" && q.AllocationName != a.name,
			q.AllocationHostname != "" && q.AllocationHostname != a.hostname,
			q.AllocationProject != "" && q.AllocationProject != a.project,
			!containsAll(m.tags, q.Tags):
			continue
		}
		out = append(out, m.firewallResponse())
	}
	send(resp, http.StatusOK, out)
}

// allocateFirewall follows the metal-api's checks and their status codes:
// a bad request, or an unknown image, size or partition, is 400; an unknown
// network or project 404; no free machine and other refusals 422. The
// partition's underlay network is added to every firewall.
func (s *Server) allocateFirewall(req *restful.Request, resp *restful.Response) {
	r := &models.V1FirewallCreateRequest{}
	if err := req.ReadEntity(r); err != nil {
		sendError(resp, httperrors.BadRequest(err))
		return
	}
	user := security.GetUser(req.Request)
	s.mu.Lock()
	m, httpErr := s.allocate(r, user)
	var out *models.V1FirewallResponse
	if m != nil {
		out = m.firewallResponse()
	}
	s.mu.Unlock()
	if httpErr != nil {
		sendError(resp, httpErr)
		return
	}
	if d := s.faults.allocationDelay(); d > 0 {
		time.Sleep(d)
	}
	s.boot(m.id)
	send(resp, http.StatusOK, out)
}

func (s *Server) allocate(r *models.V1FirewallCreateRequest, user *security.User) (*machineRecord, *httperrors.HTTPErrorResponse) {
	if r.Networks == nil {
		return nil, httperrors.BadRequest(errors.New("network ids cannot be nil"))
	}
	if len(r.Networks) == 0 {
		return nil, httperrors.BadRequest(errors.New("network ids cannot be empty"))
	}
	image, size, partition, project := ptr.Deref(r.Imageid, ""), ptr.Deref(r.Sizeid, ""), ptr.Deref(r.Partitionid, ""), ptr.Deref(r.Projectid, "")
	if !slices.Contains(s.opts.Images, image) {
		return nil, httperrors.BadRequest(fmt.Errorf("no image with id %q found", image))
	}
	if err := validateRules(r.FirewallRules); err != nil {
		return nil, httperrors.BadRequest(err)
	}
	switch {
	case partition == "":
		return nil, httperrors.BadRequest(errors.New("when no machine id is given, a partition id must be specified"))
	case size == "":
		return nil, httperrors.BadRequest(errors.New("when no machine id is given, a size id must be specified"))
	case !slices.Contains(s.opts.Sizes, size):
		return nil, httperrors.BadRequest(fmt.Errorf("size:%s not found err:no size with id %q found", size, size))
	case partition != s.opts.Partition:
		return nil, httperrors.BadRequest(fmt.Errorf("partition:%s not found err:no partition with id %q found", partition, partition))
	case project == "":
		return nil, httperrors.UnprocessableEntity(errors.New("project id must be specified"))
	}
	for _, k := range r.SSHPubKeys {
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil {
			return nil, httperrors.UnprocessableEntity(fmt.Errorf("invalid public SSH key: %s error:%w", k, err))
		}
	}
	if !slices.Contains(s.opts.Projects, project) {
		return nil, httperrors.NotFound(fmt.Errorf("project with id %q not found", project))
	}
	candidate := s.waitingMachine(size)
	if candidate == nil {
		return nil, httperrors.UnprocessableEntity(errors.New("no machine available"))
	}
	nets, httpErr := s.gatherNetworks(r.Networks, project)
	if httpErr != nil {
		return nil, httpErr
	}
	now := time.Now().UTC()
	s.nextASN++
	a := &allocation{uuid: uuid.NewString(), creator: user.EMail, name: r.Name, hostname: r.Hostname, description: r.Description,
		project: project, image: image, userData: r.UserData, created: now, sshKeys: r.SSHPubKeys, rules: storedRules(r.FirewallRules)}
	if a.hostname == "" {
		a.hostname = "metal"
	}
	for _, n := range nets {
		ip, err := n.acquire(candidate.id)
		if err != nil {
			for _, n := range nets {
				n.release(candidate.id)
			}
			return nil, httperrors.UnprocessableEntity(fmt.Errorf("unable to make networks:%w", err))
		}
		a.networks = append(a.networks, n.machineNetwork([]string{ip}, s.nextASN))
	}
	candidate.alloc = a
	candidate.tags = append(append([]string{}, r.Tags...), fmt.Sprintf("machine.metal-stack.io/network.primary.asn=%d", s.nextASN))
	candidate.changed = now
	candidate.crashLoop = false
	candidate.events = append([]event{{event: "Planned Reboot", time: now}}, candidate.events...)
	s.allocated++
	return candidate, nil
}

// gatherNetworks resolves the requested networks and adds the underlay.
func (s *Server) gatherNetworks(requested []*models.V1MachineAllocationNetwork, project string) ([]*networkRecord, *httperrors.HTTPErrorResponse) {
	var (
		out     []*networkRecord
		private int
		seen    = map[string]bool{}
	)
	for _, rn := range requested {
		id := ptr.Deref(rn.Networkid, "")
		n, ok := s.networks[id]
		if !ok {
			return nil, httperrors.NotFound(fmt.Errorf("unable to gather networks:no network with id %q found", id))
		}
		if n.Underlay {
			return nil, httperrors.UnprocessableEntity(fmt.Errorf("unable to gather networks:underlay networks are not allowed to be set explicitly: %s", id))
		}
		if seen[id] {
			return nil, httperrors.UnprocessableEntity(errors.New("unable to gather networks:given network ids are not unique"))
		}
		seen[id] = true
		if n.Private {
			private++
			if n.ProjectID != project {
				return nil, httperrors.UnprocessableEntity(errors.New("unable to gather networks:the given private network does not belong to the project, which is not allowed"))
			}
		}
		out = append(out, n)
	}
	if private == 0 {
		return nil, httperrors.UnprocessableEntity(errors.New("unable to gather networks:no private network given"))
	}
	for _, n := range s.sortedNetworks() {
		if n.Underlay {
			return append(out, n), nil
		}
	}
	return nil, httperrors.UnprocessableEntity(fmt.Errorf("unable to gather networks:no underlay found in the given partition:%s", s.opts.Partition))
}

func (s *Server) waitingMachine(size string) *machineRecord {
	for _, id := range s.sortedIDs() {
		if m := s.machines[id]; m.size == size && m.alloc == nil && !m.booted && m.busy == 0 {
			return m
		}
	}
	return nil
}

// validateRules checks firewall rules as the metal-api's EgressRule and
// IngressRule do: TCP or UDP (empty is TCP), ports within 0..65535, CIDRs
// of one address family.
func validateRules(rules *models.V1FirewallRules) error {
	if rules == nil {
		return nil
	}
	check := func(kind, protocol string, ports []int32, cidrs ...[]string) error {
		if p := strings.ToLower(protocol); p != "" && p != "tcp" && p != "udp" {
			return fmt.Errorf("%s rule has invalid protocol: %s", kind, protocol)
		}
		for _, port := range ports {
			if port < 0 || port > 65535 {
				return fmt.Errorf("%s rule with error:port is out of range", kind)
			}
		}
		var v4, v6 bool
		for _, c := range slices.Concat(cidrs...) {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return fmt.Errorf("%s rule with error:%w", kind, err)
			}
			v4, v6 = v4 || p.Addr().Is4(), v6 || p.Addr().Is6()
		}
		if v4 && v6 {
			return fmt.Errorf("%s rule with error:mixed address family in one rule is not supported", kind)
		}
		return nil
	}
	for _, r := range rules.Egress {
		if err := check("egress", r.Protocol, r.Ports, r.To); err != nil {
			return err
		}
	}
	for _, r := range rules.Ingress {
		if err := check("ingress", r.Protocol, r.Ports, r.From, r.To); err != nil {
			return err
		}
	}
	return nil
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// userData decodes an allocation's user_data: base64, as the spec asks.
func userData(a *allocation) ([]byte, error) {
	return base64.StdEncoding.DecodeString(a.userData)
}

// storedRules is what the metal-api keeps of requested rules: protocol tcp
// when empty, and nothing at all without rules.
func storedRules(rules *models.V1FirewallRules) *models.V1FirewallRules {
	if rules == nil || len(rules.Egress)+len(rules.Ingress) == 0 {
		return nil
	}
	orEmpty := func(s []string) []string { return append([]string{}, s...) }
	proto := func(p string) string {
		if p == "" {
			return "tcp"
		}
		return strings.ToLower(p)
	}
	out := &models.V1FirewallRules{Egress: []*models.V1FirewallEgressRule{}, Ingress: []*models.V1FirewallIngressRule{}}
	for _, r := range rules.Egress {
		out.Egress = append(out.Egress, &models.V1FirewallEgressRule{Comment: r.Comment, Protocol: proto(r.Protocol), Ports: append([]int32{}, r.Ports...), To: orEmpty(r.To)})
	}
	for _, r := range rules.Ingress {
		out.Ingress = append(out.Ingress, &models.V1FirewallIngressRule{Comment: r.Comment, Protocol: proto(r.Protocol), Ports: append([]int32{}, r.Ports...), From: orEmpty(r.From), To: orEmpty(r.To)})
	}
	return out
}
