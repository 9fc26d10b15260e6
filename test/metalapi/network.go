package metalapi

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/metal-stack/metal-go/api/models"
	"github.com/metal-stack/metal-lib/httperrors"
)

func (s *Server) networkService() *restful.WebService {
	ws := new(restful.WebService)
	ws.Path("/v1/network").Consumes(restful.MIME_JSON).Produces(restful.MIME_JSON)
	ws.Route(ws.GET("/{id}").To(viewer(s.findNetwork)))
	ws.Route(ws.POST("/find").To(viewer(s.findNetworks)))
	return ws
}

func (s *Server) findNetwork(req *restful.Request, resp *restful.Response) {
	id := req.PathParameter("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.networks[id]
	if !ok {
		sendError(resp, httperrors.NotFound(fmt.Errorf("no network with id %q found", id)))
		return
	}
	send(resp, http.StatusOK, n.response())
}

// findNetworks matches the criteria the clients use as the metal-api's
// datastore does: ID, name, project, VRF and underlay equal, and every
// prefix asked for among the network's prefixes.
func (s *Server) findNetworks(req *restful.Request, resp *restful.Response) {
	q := &models.V1NetworkFindRequest{}
	if err := req.ReadEntity(q); err != nil {
		sendError(resp, httperrors.BadRequest(err))
		return
	}
	wanted := make([]netip.Prefix, 0, len(q.Prefixes))
	for _, p := range q.Prefixes {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			sendError(resp, httperrors.UnprocessableEntity(fmt.Errorf("unable to parse prefix %w", err)))
			return
		}
		wanted = append(wanted, prefix)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.networkFinds++
	out := []*models.V1NetworkResponse{}
	for _, n := range s.sortedNetworks() {
		switch {
		case q.ID != "" && q.ID != n.ID,
			q.Name != "" && q.Name != n.ID,
			q.Projectid != "" && q.Projectid != n.ProjectID,
			q.Vrf != 0 && q.Vrf != n.VRF,
			q.Underlay && !n.Underlay,
			slices.ContainsFunc(wanted, func(p netip.Prefix) bool { return p != n.prefix }):
			continue
		}
		out = append(out, n.response())
	}
	send(resp, http.StatusOK, out)
}

// NetworkFinds counts the network searches answered.
func (s *Server) NetworkFinds() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.networkFinds
}

func (s *Server) sortedNetworks() []*networkRecord {
	out := make([]*networkRecord, 0, len(s.networks))
	for _, n := range s.networks {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
