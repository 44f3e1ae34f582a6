// Package readme keeps the Go code blocks of the repository's README.md
// compiling: readme_test.go holds each block verbatim inside a function,
// and TestReadme_GoBlocks_InSync fails when a README block is not found
// there, so the README cannot drift from code that builds.
package readme
