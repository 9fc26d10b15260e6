package metalapi

import (
	"fmt"
	"net/http"
	"sort"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/metal-stack/metal-lib/httperrors"
)

func (s *Server) networkService() *restful.WebService {
	ws := new(restful.WebService)
	ws.Path("/v1/network").Consumes(restful.MIME_JSON).Produces(restful.MIME_JSON)
	ws.Route(ws.GET("/{id}").To(viewer(s.findNetwork)))
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

func (s *Server) sortedNetworks() []*networkRecord {
	out := make([]*networkRecord, 0, len(s.networks))
	for _, n := range s.networks {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
