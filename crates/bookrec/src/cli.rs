//! 命令行和报错：每个实验程序都是 `程序 <模式> <设备> [参数...]`。
//!
//! 用法错误（参数不对、模式或设备不认识、设备的后端没有编译进来）以退出码 2 结束，
//! 运行中的错误以退出码 1 结束；两种都在标准错误里以程序名开头说明原因。
//! 预期的 panic（页面要演示的）照常以 101 结束，不经过这里。

use std::process::exit;

/// 一个实验程序：名字和用法说明。写成 `static`，程序里到处都能用。
#[derive(Debug)]
pub struct Program {
    /// 程序名，标准错误里每条消息的开头。
    pub name: &'static str,
    /// 用法说明，参数不对时打印。
    pub usage: &'static str,
}

/// 解析好的命令行：模式、设备，以及其余的参数。
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// 第一个参数。
    pub mode: String,
    /// 第二个参数：命令行上的设备名。
    pub device: String,
    rest: Vec<String>,
}

impl Program {
    /// 一个程序的名字和用法。
    pub const fn new(name: &'static str, usage: &'static str) -> Program {
        Program { name, usage }
    }

    /// 本进程的命令行；少于两个参数时打印用法，退出码 2。
    pub fn args(&self) -> Args {
        Args::parse(std::env::args().skip(1).collect())
            .unwrap_or_else(|| self.usage_error(self.usage))
    }

    /// 其余参数的第 `i` 个（从 0 数）当作正整数；没有时用 `default`，不是数字时退出码 2。
    pub fn num(&self, args: &Args, i: usize, default: usize) -> usize {
        args.num(i, default)
            .unwrap_or_else(|e| self.usage_error(&e))
    }

    /// 模式不认识：说出来，附上用法，退出码 2。
    pub fn unknown_mode(&self, mode: &str) -> ! {
        self.usage_error(&format!("unknown mode `{mode}`\n{}", self.usage))
    }

    /// 设备名不认识：说出来，列出认识的，退出码 2。
    pub fn unknown_device(&self, device: &str, known: &[&str]) -> ! {
        self.usage_error(&format!(
            "unknown device `{device}`: one of {}",
            known.join(", ")
        ))
    }

    /// 设备的后端没有编译进这个二进制：说出缺的是什么（`how`，例如要加的 cargo feature），退出码 2。
    pub fn not_compiled(&self, device: &str, how: &str) -> ! {
        self.usage_error(&format!(
            "device `{device}` is not compiled into this binary: {how}"
        ))
    }

    /// 用法错误：打印原因，退出码 2。
    pub fn usage_error(&self, msg: &str) -> ! {
        eprintln!("{}: {msg}", self.name);
        exit(2)
    }

    /// 运行中的错误（打不开设备、子进程失败……）：打印原因，退出码 1。
    pub fn fail(&self, msg: &str) -> ! {
        eprintln!("{}: {msg}", self.name);
        exit(1)
    }
}

impl Args {
    /// 从参数列表（不含程序名）解析；少于两个参数时为 `None`。
    pub fn parse(mut args: Vec<String>) -> Option<Args> {
        if args.len() < 2 {
            return None;
        }
        let rest = args.split_off(2);
        let device = args.pop()?;
        let mode = args.pop()?;
        Some(Args { mode, device, rest })
    }

    /// 模式和设备之后的参数。
    pub fn rest(&self) -> &[String] {
        &self.rest
    }

    /// 其余参数的第 `i` 个（从 0 数）当作正整数；没有时是 `default`。
    pub fn num(&self, i: usize, default: usize) -> Result<usize, String> {
        match self.rest.get(i) {
            None => Ok(default),
            Some(s) => s.parse().map_err(|_| format!("not a number: {s}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Option<Args> {
        Args::parse(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn mode_device_and_the_rest() {
        let a = args(&["chains", "cpu", "2048", "7"]).unwrap();
        assert_eq!((a.mode.as_str(), a.device.as_str()), ("chains", "cpu"));
        assert_eq!(a.rest(), ["2048", "7"]);
        assert_eq!(
            (a.num(0, 4096), a.num(1, 7), a.num(2, 3)),
            (Ok(2048), Ok(7), Ok(3))
        );
    }

    #[test]
    fn too_few_arguments_and_bad_numbers() {
        assert_eq!(args(&["matmul"]), None);
        assert_eq!(args(&[]), None);
        let a = args(&["matmul", "cpu", "big"]).unwrap();
        assert_eq!(a.num(0, 1024), Err("not a number: big".to_string()));
    }
}
