//! `dendro-wire encode`: JSON Lines in, a stream out.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use dendro_wire_std::{FrameWriter, OwnedFrame};

use crate::{open_input, stdout, Failure};

pub(crate) fn run(path: Option<&Path>, output: Option<&Path>) -> Result<(), Failure> {
    let input = BufReader::new(open_input(path)?);
    match output {
        Some(out) if out.as_os_str() != "-" => to_file(input, out),
        _ => {
            let mut w = stdout();
            encode(input, &mut w)?;
            w.flush()?;
            Ok(())
        }
    }
}

/// Write beside the destination, then rename: a bad line leaves no partial
/// file behind, and an existing file is replaced only by a whole stream.
fn to_file(input: impl BufRead, out: &Path) -> Result<(), Failure> {
    let name = out
        .file_name()
        .ok_or_else(|| Failure(format!("{} is not a file name", out.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp: PathBuf = out.with_file_name(tmp_name);
    let file =
        File::create(&tmp).map_err(|e| Failure(format!("cannot create {}: {e}", tmp.display())))?;
    let written = (|| {
        let mut w = BufWriter::new(file);
        encode(input, &mut w)?;
        let file = w.into_inner().map_err(|e| Failure(e.error().to_string()))?;
        file.sync_all()?;
        fs::rename(&tmp, out).map_err(|e| Failure(format!("cannot write {}: {e}", out.display())))
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

fn encode(input: impl BufRead, out: impl Write) -> Result<(), Failure> {
    let mut writer = FrameWriter::new(out)?;
    for (i, line) in input.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| Failure(format!("line {n}: {e}")))?;
        if line.trim().is_empty() {
            return Err(Failure(format!(
                "line {n}: a blank line; each line is one JSON object, one frame"
            )));
        }
        let frame: OwnedFrame =
            serde_json::from_str(&line).map_err(|e| Failure(format!("line {n}: {e}")))?;
        writer
            .write_owned(&frame)
            .map_err(|e| Failure(format!("line {n}: {e}")))?;
    }
    writer.flush()?;
    Ok(())
}
