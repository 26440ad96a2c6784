// SPDX-License-Identifier: GPL-2.0
/* a fixed-capacity stack of integers fed through /proc/kgym_bugon */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/slab.h>
#include <linux/string.h>


#define KGYM_STACK_MAX 4

static int kgym_stack[KGYM_STACK_MAX];
static int kgym_depth;
static DEFINE_MUTEX(kgym_lock);

static noinline void kgym_bugon_push(int v)
{
	BUG_ON(kgym_depth >= KGYM_STACK_MAX);
	kgym_stack[kgym_depth++] = v;
}

static ssize_t kgym_bugon_write(struct file *file, const char __user *ubuf,
				size_t len, loff_t *off)
{
	int v, err;

	err = kstrtoint_from_user(ubuf, len, 10, &v);
	if (err)
		return err;
	mutex_lock(&kgym_lock);
	kgym_bugon_push(v);
	mutex_unlock(&kgym_lock);
	return len;
}

static const struct proc_ops kgym_bugon_ops = {
	.proc_write = kgym_bugon_write,
};

static int __init kgym_bugon_init(void)
{
	if (!proc_create("kgym_bugon", 0222, NULL, &kgym_bugon_ops))
		return -ENOMEM;
	return 0;
}

static void __exit kgym_bugon_exit(void)
{
	remove_proc_entry("kgym_bugon", NULL);
}

module_init(kgym_bugon_init);
module_exit(kgym_bugon_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel-gym bundled bug: kgym_bugon");
