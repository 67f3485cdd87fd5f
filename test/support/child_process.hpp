// SPDX-License-Identifier: MIT
// A helper program run as a child process of a test, its stdout on a pipe: for peers that
// must die for real (kill -9 mid-stream) or run as another user. The destructor kills it.
#pragma once

#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace netio::test {

class ChildProcess {
 public:
  ChildProcess(const std::string& program, std::vector<std::string> arguments) {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    arguments.insert(arguments.begin(), program);
    std::vector<char*> argv;
    for (auto& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const int spawned = ::posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_fds[1]);
    out_ = pipe_fds[0];
    REQUIRE(spawned == 0);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    kill();
    ::close(out_);
  }

  // The child's next line on stdout, blocking; what there is when it exits first.
  std::string read_line() {
    std::string line;
    char c = 0;
    while (::read(out_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  // SIGSTOP: the child stops running but keeps its connections open.
  void stop() { ::kill(pid_, SIGSTOP); }
  // SIGKILL, and waits for it: no goodbye on any connection.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
};

}  // namespace netio::test
