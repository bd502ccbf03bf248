// Command codemode runs Python in the codemode sandbox and renders tool
// catalogs.
//
//	codemode exec     run code in one sandbox session
//	codemode doctor   show what this host can enforce
//	codemode stubs    generate the Python tools package from declarations
//	codemode catalog  print the tool catalog or the <code-mode> block
//	codemode fidelity report which schema keywords reach the stubs
//
// Run "codemode COMMAND --help" for a command's flags.
package main
