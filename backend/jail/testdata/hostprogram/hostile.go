//go:build hostile

package main

import (
	_ "aaa.example/startprobe/mustconfig"
	_ "aaa.example/startprobe/slowinit"
)
