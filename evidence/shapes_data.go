package evidence

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"google.golang.org/genai"
)

// ---- a fan-out of 18 calls and a join

const warehouses = 18

type warehouseArgs struct {
	Warehouse string `json:"warehouse" jsonschema:"the warehouse id, WH-01 to WH-18"`
}

type stock struct {
	Warehouse string `json:"warehouse"`
	Units     int    `json:"units"`
}

type reserveArgs struct {
	Warehouse string `json:"warehouse" jsonschema:"the warehouse id"`
	Units     int    `json:"units" jsonschema:"how many units to reserve"`
}

type reservation struct {
	ReservationID string `json:"reservation_id"`
}

func reservationID(warehouse string, units int) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%d", warehouse, units)
	return fmt.Sprintf("R-%08x", h.Sum32())
}

func fanout(context.Context, Options) (*fixture, error) {
	perm := seeded(3).Perm(900)
	units := map[string]int{}
	var ids []string
	best := ""
	for i := 1; i <= warehouses; i++ {
		id := fmt.Sprintf("WH-%02d", i)
		ids = append(ids, id)
		units[id] = 100 + perm[i]
		if best == "" || units[id] > units[best] {
			best = id
		}
	}
	tl := &toolList{n: new(atomic.Int64)}
	add(tl, "get_stock", "Return how many units a warehouse holds.", func(a warehouseArgs) (stock, error) {
		u, ok := units[a.Warehouse]
		if !ok {
			return stock{}, fmt.Errorf("no warehouse %q: ids are WH-01 to WH-18", a.Warehouse)
		}
		return stock{Warehouse: a.Warehouse, Units: u}, nil
	})
	add(tl, "reserve", "Reserve units at a warehouse; returns the reservation id.", func(a reserveArgs) (reservation, error) {
		u, ok := units[a.Warehouse]
		if !ok || a.Units < 1 || a.Units > u {
			return reservation{}, fmt.Errorf("cannot reserve %d units at %q", a.Units, a.Warehouse)
		}
		return reservation{ReservationID: reservationID(a.Warehouse, a.Units)}, nil
	})
	pick := func(ss []stock) string {
		return slices.MaxFunc(ss, func(a, b stock) int { return a.Units - b.Units }).Warehouse
	}
	return &fixture{
		prompt: "Check the stock of the 18 warehouses WH-01 to WH-18, reserve 10 units at the one holding the most, and answer with the reservation id only.",
		tools:  tl.list, direct: names(tl.list), answer: reservationID(best, 10), calls: tl.n,
		direct0: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					var t Turn
					for _, id := range ids {
						t.Calls = append(t.Calls, call("get_stock", map[string]any{"warehouse": id}))
					}
					return t, nil
				},
				func(obs Observation) (Turn, error) {
					ss, err := responses[stock](obs, "get_stock")
					if err != nil {
						return Turn{}, err
					}
					return Turn{Calls: []*genai.FunctionCall{call("reserve", map[string]any{"warehouse": pick(ss), "units": 10})}}, nil
				},
				func(obs Observation) (Turn, error) {
					r, err := response[reservation](obs, "reserve")
					return answer(r.ReservationID), err
				})
		},
		code: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return code(`from concurrent.futures import ThreadPoolExecutor
from tools import get_stock, reserve
ids = [f"WH-{i:02d}" for i in range(1, 19)]
with ThreadPoolExecutor(max_workers=6) as pool:
    stock = list(pool.map(lambda w: get_stock(warehouse=w), ids))
best = max(stock, key=lambda s: s["units"])
print(reserve(warehouse=best["warehouse"], units=10)["reservation_id"])
`), nil
				},
				printed)
		},
	}, tl.err
}

// ---- a reduction of 5,000 rows to one number

type order struct {
	ID          string `json:"id"`
	Region      string `json:"region"`
	Status      string `json:"status"`
	AmountCents int    `json:"amount_cents"`
}

type orderList struct {
	Orders []order `json:"orders"`
}

type noArgs struct{}

const orderRows = 5000

func reduce(context.Context, Options) (*fixture, error) {
	r := seeded(4)
	regions := []string{"north", "south", "east", "west"}
	statuses := []string{"paid", "paid", "paid", "refunded", "pending"}
	orders := make([]order, orderRows)
	want := 0
	for i := range orders {
		o := order{ID: fmt.Sprintf("O-%05d", i+1), Region: regions[r.IntN(len(regions))], Status: statuses[r.IntN(len(statuses))], AmountCents: 100 + r.IntN(99_900)}
		orders[i] = o
		if o.Region == "north" && o.Status == "paid" {
			want += o.AmountCents
		}
	}
	tl := &toolList{n: new(atomic.Int64)}
	add(tl, "list_orders", "Return every order of the quarter: id, region, status and amount in cents.", func(noArgs) (orderList, error) {
		return orderList{Orders: orders}, nil
	})
	return &fixture{
		prompt: "What is the total amount, in cents, of the paid orders in the north region this quarter? Answer with the number only.",
		tools:  tl.list, direct: names(tl.list), answer: strconv.Itoa(want), calls: tl.n,
		direct0: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return Turn{Calls: []*genai.FunctionCall{call("list_orders", map[string]any{})}}, nil
				},
				func(obs Observation) (Turn, error) {
					l, err := response[orderList](obs, "list_orders")
					sum := 0
					for _, o := range l.Orders {
						if o.Region == "north" && o.Status == "paid" {
							sum += o.AmountCents
						}
					}
					return answer(strconv.Itoa(sum)), err
				})
		},
		code: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return code(`from tools import list_orders
orders = list_orders()["orders"]
print(sum(o["amount_cents"] for o in orders if o["region"] == "north" and o["status"] == "paid"))
`), nil
				},
				printed)
		},
	}, tl.err
}

// ---- a filter, then one call per match

type user struct {
	UserID  string `json:"user_id"`
	Country string `json:"country"`
	Active  bool   `json:"active"`
}

type userList struct {
	Users []user `json:"users"`
}

type balanceArgs struct {
	UserID string `json:"user_id" jsonschema:"the user's id, such as U-001"`
}

type balance struct {
	UserID       string `json:"user_id"`
	BalanceCents int    `json:"balance_cents"`
}

func filterEach(context.Context, Options) (*fixture, error) {
	r := seeded(5)
	countries := []string{"NO", "PT", "FI", "AT", "BE", "FR", "IE", "DK", "SE", "NL"}
	var users []user
	balances := map[string]int{}
	want, matches := 0, 0
	for i := 1; i <= 120; i++ {
		u := user{UserID: fmt.Sprintf("U-%03d", i), Country: countries[r.IntN(len(countries))], Active: r.IntN(10) < 7}
		users = append(users, u)
		balances[u.UserID] = r.IntN(1_000_000)
		if u.Country == "NO" && u.Active {
			want += balances[u.UserID]
			matches++
		}
	}
	if matches < 2 {
		return nil, fmt.Errorf("the filter shape's data has %d matches; want several", matches)
	}
	tl := &toolList{n: new(atomic.Int64)}
	add(tl, "list_users", "Return every user: id, country code and whether the account is active.", func(noArgs) (userList, error) {
		return userList{Users: users}, nil
	})
	add(tl, "get_balance", "Return a user's balance in cents.", func(a balanceArgs) (balance, error) {
		b, ok := balances[a.UserID]
		if !ok {
			return balance{}, fmt.Errorf("no user %q", a.UserID)
		}
		return balance{UserID: a.UserID, BalanceCents: b}, nil
	})
	return &fixture{
		prompt: "What is the total balance, in cents, of the active users in Norway (country NO)? Answer with the number only.",
		tools:  tl.list, direct: names(tl.list), answer: strconv.Itoa(want), calls: tl.n,
		direct0: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return Turn{Calls: []*genai.FunctionCall{call("list_users", map[string]any{})}}, nil
				},
				func(obs Observation) (Turn, error) {
					l, err := response[userList](obs, "list_users")
					var t Turn
					for _, u := range l.Users {
						if u.Country == "NO" && u.Active {
							t.Calls = append(t.Calls, call("get_balance", map[string]any{"user_id": u.UserID}))
						}
					}
					return t, err
				},
				func(obs Observation) (Turn, error) {
					bs, err := responses[balance](obs, "get_balance")
					sum := 0
					for _, b := range bs {
						sum += b.BalanceCents
					}
					return answer(strconv.Itoa(sum)), err
				})
		},
		code: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return code(`from tools import list_users, get_balance
ids = [u["user_id"] for u in list_users()["users"] if u["country"] == "NO" and u["active"]]
print(sum(get_balance(user_id=i)["balance_cents"] for i in ids))
`), nil
				},
				printed)
		},
	}, tl.err
}

// ---- pagination through 12 pages

const (
	pages        = 12
	eventsOnPage = 25
)

type pageArgs struct {
	PageToken string `json:"page_token,omitempty" jsonschema:"the next_page_token of the previous page; empty for the first page"`
}

type event struct {
	ID    string `json:"id"`
	Level string `json:"level"`
}

type page struct {
	Events        []event `json:"events"`
	NextPageToken string  `json:"next_page_token"`
}

func pageToken(i int) string {
	if i >= pages {
		return ""
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "page %d", i)
	return fmt.Sprintf("pt-%08x", h.Sum32())
}

func paginate(context.Context, Options) (*fixture, error) {
	r := seeded(6)
	levels := []string{"info", "info", "info", "warning", "error"}
	byToken := map[string]page{}
	want := 0
	for i := range pages {
		var p page
		for j := range eventsOnPage {
			e := event{ID: fmt.Sprintf("E-%04d", i*eventsOnPage+j+1), Level: levels[r.IntN(len(levels))]}
			if e.Level == "error" {
				want++
			}
			p.Events = append(p.Events, e)
		}
		p.NextPageToken = pageToken(i + 1)
		tok := ""
		if i > 0 {
			tok = pageToken(i)
		}
		byToken[tok] = p
	}
	tl := &toolList{n: new(atomic.Int64)}
	add(tl, "list_events", "Return one page of the event log, 25 events, and the token of the next page (empty on the last).", func(a pageArgs) (page, error) {
		p, ok := byToken[a.PageToken]
		if !ok {
			return page{}, fmt.Errorf("unknown page token %q: pass the previous page's next_page_token", a.PageToken)
		}
		return p, nil
	})
	return &fixture{
		prompt: "How many events of level error are in the event log? Read every page. Answer with the number only.",
		tools:  tl.list, direct: names(tl.list), answer: strconv.Itoa(want), calls: tl.n,
		direct0: func() Policy {
			count := 0
			return func(obs Observation) (Turn, error) {
				tok := ""
				if obs.Step > 0 {
					p, err := response[page](obs, "list_events")
					if err != nil {
						return Turn{}, err
					}
					for _, e := range p.Events {
						if e.Level == "error" {
							count++
						}
					}
					if p.NextPageToken == "" {
						return answer(strconv.Itoa(count)), nil
					}
					tok = p.NextPageToken
				}
				return Turn{Calls: []*genai.FunctionCall{call("list_events", map[string]any{"page_token": tok})}}, nil
			}
		},
		code: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return code(`from tools import list_events
count, token = 0, ""
while True:
    page = list_events(page_token=token)
    count += sum(1 for e in page["events"] if e["level"] == "error")
    token = page["next_page_token"]
    if not token:
        break
print(count)
`), nil
				},
				printed)
		},
	}, tl.err
}

// ---- a step that needs the model's judgement

type ticketArgs struct {
	TicketID string `json:"ticket_id" jsonschema:"the ticket's id, such as T-1001"`
}

type ticket struct {
	TicketID string `json:"ticket_id"`
	Text     string `json:"text"`
}

type routeArgs struct {
	TicketID string `json:"ticket_id" jsonschema:"the ticket's id"`
	Team     string `json:"team" jsonschema:"billing, technical or account"`
}

type routed struct {
	TicketID      string `json:"ticket_id"`
	Team          string `json:"team"`
	QueuePosition int    `json:"queue_position"`
}

// ticketText is a customer's message whose team only a reading tells:
// it names a crash and a password, but what is wrong is a double charge.
const ticketText = "Hello, the app did not crash and my password works fine, thank you. " +
	"But my card was debited twice for the March subscription, 12.99 each time, and I would like the second one back."

// read is the scripted model's reading of a ticket: the team it needs.
// It stands in for the model's judgement, which is what the shape is
// about; it knows this one text.
func read(text string) (string, error) {
	if strings.Contains(text, "debited twice") {
		return "billing", nil
	}
	return "", fmt.Errorf("the scripted reader does not know the text %q", text)
}

func judge(context.Context, Options) (*fixture, error) {
	const id = "T-1042"
	queue := map[string]int{"billing": 4, "technical": 11, "account": 2}
	tl := &toolList{n: new(atomic.Int64)}
	add(tl, "get_ticket", "Return a support ticket's text.", func(a ticketArgs) (ticket, error) {
		if a.TicketID != id {
			return ticket{}, fmt.Errorf("no ticket %q", a.TicketID)
		}
		return ticket{TicketID: id, Text: ticketText}, nil
	})
	add(tl, "route_ticket", "Send a ticket to a team's queue; returns its place in the queue.", func(a routeArgs) (routed, error) {
		q, ok := queue[a.Team]
		if !ok || a.TicketID != id {
			return routed{}, fmt.Errorf("cannot route %q to %q: teams are billing, technical and account", a.TicketID, a.Team)
		}
		return routed{TicketID: id, Team: a.Team, QueuePosition: q}, nil
	})
	routeCall := func(team string) *genai.FunctionCall {
		return call("route_ticket", map[string]any{"ticket_id": id, "team": team})
	}
	return &fixture{
		prompt: "Read ticket " + id + ", route it to the team that should handle it (billing, technical or account), and answer with the team and its place in the queue, as \"team position\".",
		tools:  tl.list, direct: names(tl.list), answer: "billing 4", calls: tl.n,
		direct0: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return Turn{Calls: []*genai.FunctionCall{call("get_ticket", map[string]any{"ticket_id": id})}}, nil
				},
				func(obs Observation) (Turn, error) {
					t, err := response[ticket](obs, "get_ticket")
					if err != nil {
						return Turn{}, err
					}
					team, err := read(t.Text)
					return Turn{Calls: []*genai.FunctionCall{routeCall(team)}}, err
				},
				func(obs Observation) (Turn, error) {
					r, err := response[routed](obs, "route_ticket")
					return answer(fmt.Sprintf("%s %d", r.Team, r.QueuePosition)), err
				})
		},
		code: func() Policy {
			return steps(
				func(Observation) (Turn, error) {
					return code("from tools import get_ticket\nprint(get_ticket(ticket_id=" + strconv.Quote(id) + ")[\"text\"])\n"), nil
				},
				func(obs Observation) (Turn, error) {
					text, err := stdout(obs)
					if err != nil {
						return Turn{}, err
					}
					team, err := read(text)
					return code("from tools import route_ticket\nr = route_ticket(ticket_id=" + strconv.Quote(id) + ", team=" + strconv.Quote(team) + ")\nprint(r[\"team\"], r[\"queue_position\"])\n"), err
				},
				printed)
		},
	}, tl.err
}
