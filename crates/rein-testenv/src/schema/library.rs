//! The Kubernetes CEL library functions cel-rust lacks that CRD rules commonly use: the lists
//! library (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`) and the regex library
//! (`find`, `findAll`), registered on the shared environment.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError, Value};

/// The functions this module adds (the compile-time check accepts them).
pub(crate) const NAMES: &[&str] = &["isSorted", "sum", "min", "max", "find", "findAll"];

/// Registers the functions on `env`; a declaration cel-rust refuses is left out (rules using
/// it then fail with a runtime error cause).
pub(crate) fn register(env: &mut Env) {
    let _ = env.add_member_overload(
        "isSorted",
        "k8s.list.isSorted()",
        LIST_TYPE,
        vec![],
        is_sorted,
    );
    let _ = env.add_member_overload("sum", "k8s.list.sum()", LIST_TYPE, vec![], sum);
    let _ = env.add_member_overload("min", "k8s.list.min()", LIST_TYPE, vec![], min);
    let _ = env.add_member_overload("max", "k8s.list.max()", LIST_TYPE, vec![], max);
    let _ = env.add_member_overload(
        "indexOf",
        "k8s.list.indexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    );
    let _ = env.add_member_overload(
        "lastIndexOf",
        "k8s.list.lastIndexOf(dyn)",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    );
    let _ = env.add_member_overload(
        "find",
        "k8s.string.find(string)",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    );
    let _ = env.add_member_overload(
        "findAll",
        "k8s.string.findAll(string)",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    );
    let _ = env.add_member_overload(
        "findAll",
        "k8s.string.findAll(string,int)",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    );
}

fn values(args: Vec<CowVal<'_, '_>>) -> Result<Vec<Value>, ExecutionError> {
    args.iter().map(|a| Value::try_from(a.as_ref())).collect()
}

fn answer<'b, 'v>(value: Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn Val> = Box::try_from(value)?;
    Ok(CowVal::from(boxed))
}

fn list_arg(args: &[Value], function: &str) -> Result<Arc<Vec<Value>>, ExecutionError> {
    match args.first() {
        Some(Value::List(items)) => Ok(items.clone()),
        _ => Err(ExecutionError::function_error(function, "expected a list")),
    }
}

/// Orders two values of one comparable type (numbers across int, uint and double).
fn compare(a: &Value, b: &Value, function: &str) -> Result<Ordering, ExecutionError> {
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::UInt(u) => Some(*u as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    };
    let ordering = match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => x.partial_cmp(&y),
            _ => None,
        },
    };
    ordering.ok_or_else(|| ExecutionError::function_error(function, "no such overload"))
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = list_arg(&values(args)?, "isSorted")?;
    for pair in items.windows(2) {
        if compare(&pair[0], &pair[1], "isSorted")? == Ordering::Greater {
            return answer(Value::Bool(false));
        }
    }
    answer(Value::Bool(true))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = list_arg(&values(args)?, "sum")?;
    let mut total = Value::Int(0);
    for item in items.iter() {
        total = match (&total, item) {
            (Value::Int(a), Value::Int(b)) => Value::Int(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::Int(0), Value::UInt(b)) => Value::UInt(*b),
            (Value::UInt(a), Value::UInt(b)) => Value::UInt(
                a.checked_add(*b)
                    .ok_or_else(|| ExecutionError::function_error("sum", "integer overflow"))?,
            ),
            (Value::Int(0), Value::Float(b)) => Value::Float(*b),
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            _ => return Err(ExecutionError::function_error("sum", "no such overload")),
        };
    }
    answer(total)
}

fn extreme<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    keep: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = list_arg(&values(args)?, function)?;
    let mut best: Option<&Value> = None;
    for item in items.iter() {
        best = match best {
            Some(b) if compare(item, b, function)? != keep => Some(b),
            _ => Some(item),
        };
    }
    match best {
        Some(v) => answer(v.clone()),
        None => Err(ExecutionError::function_error(
            function,
            format!("{function} called on empty list"),
        )),
    }
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", Ordering::Greater)
}

fn position<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(args)?;
    let items = list_arg(&args, function)?;
    let wanted = args
        .get(1)
        .ok_or_else(|| ExecutionError::function_error(function, "expected an argument"))?;
    let found = if last {
        items.iter().rposition(|v| v == wanted)
    } else {
        items.iter().position(|v| v == wanted)
    };
    answer(Value::Int(found.map_or(-1, |i| i as i64)))
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, "indexOf", false)
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    position(args, "lastIndexOf", true)
}

fn regex_args(args: &[Value], function: &str) -> Result<(String, regex::Regex), ExecutionError> {
    match (args.first(), args.get(1)) {
        (Some(Value::String(s)), Some(Value::String(p))) => {
            let re = regex::Regex::new(p)
                .map_err(|e| ExecutionError::function_error(function, e.to_string()))?;
            Ok((s.to_string(), re))
        }
        _ => Err(ExecutionError::function_error(function, "no such overload")),
    }
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, re) = regex_args(&values(args)?, "find")?;
    let found = re
        .find(&s)
        .map(|m| m.as_str().to_string())
        .unwrap_or_default();
    answer(Value::String(Arc::new(found)))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let args = values(args)?;
    let (s, re) = regex_args(&args, "findAll")?;
    let limit = match args.get(2) {
        Some(Value::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let all: Vec<Value> = re
        .find_iter(&s)
        .take(limit)
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    answer(Value::List(Arc::new(all)))
}
