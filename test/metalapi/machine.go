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

// freeMachine halts the machine and takes back its allocation, tags and
// addresses; an unknown machine is 404, a free one is freed again (200).
func (s *Server) freeMachine(req *restful.Request, resp *restful.Response) {
	id := req.PathParameter("id")
	s.mu.Lock()
	m, ok := s.machines[id]
	booted := ok && m.booted
	s.mu.Unlock()
	if !ok {
		sendError(resp, httperrors.NotFound(fmt.Errorf("no machine with id %q found", id)))
		return
	}
	if booted && s.opts.Hardware != nil {
		if err := s.opts.Hardware.Halt(id); err != nil {
			sendError(resp, httperrors.InternalServerError(fmt.Errorf("halting machine %s: %w", id, err)))
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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
