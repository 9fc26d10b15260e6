package metalapi

import (
	"fmt"
	"net/http"
	"sort"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/metal-stack/metal-lib/httperrors"
)

// eventReclaim is the provisioning event of a freed machine.
const eventReclaim = "Machine Reclaim"

func (s *Server) machineService() *restful.WebService {
	ws := new(restful.WebService)
	ws.Path("/v1/machine").Consumes(restful.MIME_JSON).Produces(restful.MIME_JSON)
	ws.Route(ws.DELETE("/{id}/free").To(editor(s.freeMachine)))
	return ws
}

// freeMachine takes back the machine's allocation, tags and addresses and
// halts it in the background, as the metal-api answers before the machine
// rebooted; an unknown machine is 404, a free one is freed again (200).
func (s *Server) freeMachine(req *restful.Request, resp *restful.Response) {
	id := req.PathParameter("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.machines[id]
	if !ok {
		sendError(resp, httperrors.NotFound(fmt.Errorf("no machine with id %q found", id)))
		return
	}
	if m.booted && s.opts.Hardware != nil {
		m.busy++
		s.inFlight.Add(1)
		go s.halt(id)
	}
	for _, n := range s.networks {
		n.release(id)
	}
	m.booted = false
	m.alloc = nil
	m.tags = nil
	now := time.Now().UTC()
	m.changed = now
	m.events = append([]event{{event: eventReclaim, message: "free machine called", time: now}}, m.events...)
	send(resp, http.StatusOK, m.machineResponse())
}

func (s *Server) sortedIDs() []string {
	ids := make([]string, 0, len(s.machines))
	for id := range s.machines {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
