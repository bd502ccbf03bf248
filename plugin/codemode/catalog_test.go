package codemode

import (
	"fmt"
	"strings"
	"sync"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
)

// catalogTool is one operation of a synthetic REST catalog: a runnable
// tool that records its calls and echoes its arguments.
type catalogTool struct {
	decl  *genai.FunctionDeclaration
	mu    *sync.Mutex
	calls *[]catalogCall
	ns    string
}

type catalogCall struct {
	Path string
	Args map[string]any
}

func (c *catalogTool) Name() string                            { return c.decl.Name }
func (c *catalogTool) Description() string                     { return c.decl.Description }
func (c *catalogTool) IsLongRunning() bool                     { return false }
func (c *catalogTool) Declaration() *genai.FunctionDeclaration { return c.decl }

func (c *catalogTool) Run(_ agent.Context, args any) (map[string]any, error) {
	m, _ := args.(map[string]any)
	c.mu.Lock()
	*c.calls = append(*c.calls, catalogCall{Path: c.ns + "." + c.decl.Name, Args: m})
	c.mu.Unlock()
	return map[string]any{"id": 1, "ok": true, "operation": c.decl.Name}, nil
}

// catalogNamespaces are the namespaces of the synthetic catalog and their
// resources, modelled on GitHub's REST API.
var catalogNamespaces = []struct {
	name      string
	resources []string
}{
	{"actions", []string{"artifact", "cache", "workflow", "workflow_run", "job", "secret", "variable", "runner", "runner_group", "environment_secret", "org_secret", "repo_variable"}},
	{"activity", []string{"event", "notification", "star", "watch", "feed", "thread_subscription"}},
	{"apps", []string{"installation", "installation_token", "webhook_delivery", "marketplace_plan", "subscription"}},
	{"billing", []string{"usage_report", "budget", "cost_center"}},
	{"checks", []string{"check_run", "check_suite", "annotation"}},
	{"code_scanning", []string{"alert", "analysis", "codeql_database", "sarif_upload", "default_setup"}},
	{"codespaces", []string{"codespace", "devcontainer", "machine", "codespace_secret"}},
	{"copilot", []string{"seat", "usage_metric", "content_exclusion"}},
	{"dependabot", []string{"alert", "secret", "repository_access"}},
	{"dependency_graph", []string{"snapshot", "sbom", "diff"}},
	{"gists", []string{"gist", "comment", "fork", "star"}},
	{"git", []string{"blob", "commit", "ref", "tag", "tree"}},
	{"interactions", []string{"org_restriction", "repo_restriction"}},
	{"issues", []string{"issue", "comment", "event", "label", "milestone", "assignee", "sub_issue", "timeline_event"}},
	{"migrations", []string{"migration", "import", "author"}},
	{"orgs", []string{"member", "outside_collaborator", "invitation", "webhook", "role", "custom_property", "security_manager", "ruleset"}},
	{"packages", []string{"package", "package_version"}},
	{"projects", []string{"project", "column", "card", "field", "item"}},
	{"pulls", []string{"pull_request", "review", "review_comment", "requested_reviewer", "commit", "file"}},
	{"reactions", []string{"issue_reaction", "comment_reaction", "release_reaction"}},
	{"repos", []string{"repository", "branch", "branch_protection", "collaborator", "commit_comment", "content", "deploy_key", "deployment", "environment", "fork", "webhook", "invitation", "page", "release", "release_asset", "status", "tag_protection", "topic", "autolink", "ruleset"}},
	{"search", []string{"code_result", "commit_result", "issue_result", "label_result", "repository_result", "topic_result", "user_result"}},
	{"secret_scanning", []string{"alert", "location", "push_protection_bypass"}},
	{"security_advisories", []string{"advisory", "private_report", "cve_request"}},
	{"teams", []string{"team", "member", "discussion", "discussion_comment", "repository_permission", "project_permission"}},
	{"users", []string{"user", "email", "follower", "gpg_key", "ssh_key", "social_account", "ssh_signing_key"}},
}

// catalogVerbs are the operations of each resource, with the sentence
// that opens their description.
var catalogVerbs = []struct{ verb, sentence string }{
	{"list", "Lists the %ss of %s."},
	{"get", "Gets one %s of %s."},
	{"create", "Creates a %s in %s."},
	{"update", "Updates a %s of %s."},
	{"delete", "Deletes a %s from %s."},
	{"list_for_org", "Lists the %ss of every repository of an organization (%s)."},
	{"list_for_authenticated_user", "Lists the %ss the authenticated user can see (%s)."},
	{"list_for_user", "Lists the public %ss of a user (%s)."},
	{"set", "Replaces the settings of a %s of %s."},
}

// syntheticCatalog returns n tools in toolsets, one per namespace, named
// and documented the way GitHub's REST operations are; calls records
// every call.
func syntheticCatalog(n int, mu *sync.Mutex, calls *[]catalogCall) []tool.Toolset {
	byNS := map[string][]tool.Tool{}
	count := 0
	for _, v := range catalogVerbs {
		for _, ns := range catalogNamespaces {
			for _, res := range ns.resources {
				if count == n {
					break
				}
				name := v.verb + "_" + res
				if strings.HasPrefix(v.verb, "list_for_") {
					name = "list_" + res + "s_" + strings.TrimPrefix(v.verb, "list_")
				}
				words := strings.ReplaceAll(res, "_", " ")
				where := "a repository"
				if ns.name == "orgs" || ns.name == "copilot" || ns.name == "billing" {
					where = "an organization"
				}
				desc := fmt.Sprintf(v.sentence, words, where) + fmt.Sprintf("\n\nThis endpoint belongs to the %s API. OAuth app tokens and personal access tokens (classic) need the `repo` scope to use it.\n\n- The response is paginated.\n- Results are sorted by creation date.", strings.ReplaceAll(ns.name, "_", " "))
				props := map[string]any{
					"owner": map[string]any{"type": "string", "description": "The account owner of the repository. The name is not case sensitive."},
					"repo":  map[string]any{"type": "string", "description": "The name of the repository without the `.git` extension."},
				}
				required := []any{"owner", "repo"}
				idName := res + "_number"
				if ns.name != "issues" && ns.name != "pulls" {
					idName = res + "_id"
				}
				if ns.name == "issues" && res == "comment" {
					idName = "issue_number" // a comment is created on an issue
				}
				switch v.verb {
				case "get", "update", "delete", "set":
					props[idName] = map[string]any{"type": "integer", "description": "The number that identifies the " + words + "."}
					required = append(required, idName)
				case "create":
					if idName == "issue_number" {
						props[idName] = map[string]any{"type": "integer", "description": "The number that identifies the issue."}
						required = append(required, idName)
					}
					props["body"] = map[string]any{"type": "string", "description": "The contents of the " + words + "."}
					required = append(required, "body")
					props["title"] = map[string]any{"type": "string", "description": "A short title."}
				default:
					props["per_page"] = map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 30, "description": "The number of results per page (max 100)."}
					props["page"] = map[string]any{"type": "integer", "default": 1, "description": "The page number of the results to fetch."}
					props["direction"] = map[string]any{"type": "string", "enum": []any{"asc", "desc"}, "description": "The direction to sort the results by."}
				}
				decl := &genai.FunctionDeclaration{Name: name, Description: desc, ParametersJsonSchema: map[string]any{"type": "object", "properties": props, "required": required}}
				byNS[ns.name] = append(byNS[ns.name], &catalogTool{decl: decl, mu: mu, calls: calls, ns: ns.name})
				count++
			}
		}
	}
	var out []tool.Toolset
	for _, ns := range catalogNamespaces {
		if len(byNS[ns.name]) > 0 {
			out = append(out, staticToolset{name: ns.name, tools: byNS[ns.name]})
		}
	}
	return out
}
