//! The `dendro-wire` tool run as a process, for the tool's tests: a run
//! with its standard input fed and its output captured, and `listen`
//! started and waited for until it listens. Every wait is bounded by
//! [`TIMEOUT`], so a tool that hangs fails its test rather than the suite.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a test waits for the tool: to exit, or to print a line.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// The tool's binary. Cargo names it only to the tool's own tests, so each
/// makes one from where it is called:
/// `Tool::new(env!("CARGO_BIN_EXE_dendro-wire"))`.
#[derive(Clone, Copy, Debug)]
pub struct Tool(&'static str);

impl Tool {
    pub const fn new(bin: &'static str) -> Tool {
        Tool(bin)
    }

    /// A command that runs the tool, for a test to add to.
    pub fn command(&self) -> Command {
        Command::new(self.0)
    }

    /// Run the tool with `args`, `stdin` on its standard input, and wait
    /// for it to exit.
    pub fn run<S: AsRef<OsStr>>(&self, args: impl IntoIterator<Item = S>, stdin: &[u8]) -> Output {
        output(self.command().args(args), stdin)
    }

    /// `dendro-wire listen` with `args`, once it has said where it listens.
    pub fn listen(&self, args: &[&OsStr]) -> Listening {
        let mut child = self
            .command()
            .arg("listen")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        let stderr = read_to_end(child.stderr.take().unwrap());
        let mut listening = Listening {
            child,
            lines,
            stderr,
            addr: String::new(),
        };
        let first = listening.next_line();
        listening.addr = first
            .strip_prefix("listening on ")
            .expect(&first)
            .to_string();
        listening
    }

    /// One connection served: `listen` on a free loopback port for one
    /// connection, with `extra` arguments; `client` run with the address it
    /// listens on; then the line `listen` printed for the connection, and
    /// its exit, which must be a success.
    pub fn serve_one(&self, extra: &[&OsStr], client: impl FnOnce(&str) -> Output) -> Served {
        let args = [
            "--bind".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--connections".as_ref(),
            "1".as_ref(),
        ];
        let listen = self.listen(&[&args[..], extra].concat());
        let client = client(listen.addr());
        let line = listen.lines.recv_timeout(TIMEOUT).unwrap_or_else(|_| {
            panic!(
                "listen printed no line for the connection; the client said: {}",
                String::from_utf8_lossy(&client.stderr)
            )
        });
        let listened = listen.finish();
        assert!(listened.status.success(), "{}", listened.stderr);
        Served {
            client,
            line,
            stderr: listened.stderr,
        }
    }
}

/// What [`Tool::serve_one`] saw.
#[derive(Debug)]
pub struct Served {
    /// The client's run.
    pub client: Output,
    /// What `listen` printed for the connection.
    pub line: String,
    /// What `listen` wrote to its standard error.
    pub stderr: String,
}

/// A running `dendro-wire listen`.
pub struct Listening {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: JoinHandle<Vec<u8>>,
    addr: String,
}

/// A `listen` that has exited.
#[derive(Debug)]
pub struct Listened {
    pub status: ExitStatus,
    /// The lines of its standard output after the first (where it listens).
    pub lines: Vec<String>,
    pub stderr: String,
}

impl Listening {
    /// Where it said it listens.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The next line of its standard output.
    pub fn next_line(&mut self) -> String {
        self.lines
            .recv_timeout(TIMEOUT)
            .unwrap_or_else(|e| panic!("listen printed no line: {e}"))
    }

    /// Send it SIGTERM (through `kill`); whether that was sent.
    pub fn terminate(&self) -> bool {
        Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Wait for it to exit: its status, and what it printed that was not
    /// yet read.
    pub fn finish(mut self) -> Listened {
        let status = wait(&mut self.child);
        Listened {
            status,
            lines: self.lines.iter().collect(),
            stderr: String::from_utf8_lossy(&self.stderr.join().unwrap()).into_owned(),
        }
    }
}

/// Run `cmd` with `stdin` on its standard input (written from another
/// thread, as the tool may exit before it reads it all) and its output
/// captured, and wait for it to exit.
pub fn output(cmd: &mut Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let stdout = read_to_end(child.stdout.take().unwrap());
    let stderr = read_to_end(child.stderr.take().unwrap());
    let status = wait(&mut child);
    feeder.join().unwrap();
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Wait for `child` to exit, for at most [`TIMEOUT`]: past that it is
/// killed and the test fails.
pub fn wait(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the tool did not exit within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Everything `pipe` gives, read on another thread so a full pipe never
/// stalls the process writing it.
fn read_to_end(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        pipe.read_to_end(&mut bytes).unwrap();
        bytes
    })
}

/// Its standard output, which must be UTF-8.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Its standard error, which must be UTF-8.
pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The number after `label` in `text`, as a summary line says it: what a
/// test reads off a command's output.
pub fn number_after(text: &str, label: &str) -> u64 {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("{label:?} in {text}"))
        + label.len();
    text[at..]
        .trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("a number after {label:?} in {text}"))
}
