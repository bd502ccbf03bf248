package jailplan

import _ "embed"

// PythonSource is the plan's interpreter in Python (plan.py): it defines
// run_plan(plan), which takes a plan decoded from its JSON and returns the
// reported results by name, and PlanError, which a failed step raises with
// its op, errno and message.
//
//go:embed plan.py
var PythonSource string
