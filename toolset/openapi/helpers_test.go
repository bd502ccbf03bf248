package openapi

import "google.golang.org/adk/v2/model"

// modelRequest holds one LLM request across calls.
type modelRequest struct{ req *model.LLMRequest }

func (m *modelRequest) r() *model.LLMRequest {
	if m.req == nil {
		m.req = &model.LLMRequest{}
	}
	return m.req
}
